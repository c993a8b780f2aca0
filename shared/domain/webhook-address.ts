/**
 * Which network addresses a webhook may reach (docs/security.md, docs/protocol.md §7 "SSRF"). Pure: the
 * adapter that resolves DNS and connects (shared/adapters/ssrf-guard.ts) asks this module about
 * every address it is about to use, and the push use cases ask it about a URL when it is stored.
 *
 * IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
 * `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4 address inside,
 * so `::ffff:127.0.0.1` is loopback and `::ffff:169.254.169.254` is link-local.
 */

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'unspecified'
  | 'reserved';

/** What a target may be. Deployments never allow loopback; local mode may (docs/configuration.md). */
export interface WebhookPolicy {
  /** Plain `http:` is accepted (local mode only). */
  readonly allowHttp: boolean;
  /** Loopback targets (127.0.0.0/8, ::1, `localhost`) are accepted (local mode only). */
  readonly allowLoopback: boolean;
}

/** The policy of a deployment: https only, public addresses only. */
export const strictWebhookPolicy: WebhookPolicy = { allowHttp: false, allowLoopback: false };

/** Local mode relaxes the scheme and, unless `webhooks.allowLoopback: false`, loopback. */
export const webhookPolicyFor = (localMode: boolean, allowLoopback: boolean | undefined): WebhookPolicy =>
  localMode ? { allowHttp: true, allowLoopback: allowLoopback !== false } : strictWebhookPolicy;

/** Parses a dotted-quad IPv4 address (the canonical form only; URL parsing normalizes other spellings). */
export const parseIpv4 = (text: string): Uint8Array | undefined => {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (const [index, part] of parts.entries()) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[index] = value;
  }
  return bytes;
};

/** Parses an IPv6 address (`::` compression, a trailing dotted quad, a zone id) into 16 bytes. */
export const parseIpv6 = (input: string): Uint8Array | undefined => {
  let text = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  if (!text.includes(':')) return undefined;
  let tail: Uint8Array | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tail = parseIpv4(text.slice(lastColon + 1));
    if (tail === undefined) return undefined;
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string | undefined): string[] | undefined => {
    if (half === undefined || half === '') return [];
    const groups = half.split(':');
    return groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group)) ? groups : undefined;
  };
  const head = groupsOf(halves[0]);
  const rest = groupsOf(halves[1]);
  if (head === undefined || rest === undefined) return undefined;
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill('0'), ...rest];
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    const value = Number.parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  if (tail) bytes.set(tail, 12);
  return bytes;
};

const inPrefix = (bytes: Uint8Array, prefix: readonly number[], bits: number): boolean => {
  for (let bit = 0; bit < bits; bit += 8) {
    const remaining = Math.min(8, bits - bit);
    const mask = (0xff << (8 - remaining)) & 0xff;
    if (((bytes[bit / 8] ?? 0) & mask) !== ((prefix[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
};

type Range = readonly [prefix: readonly number[], bits: number, kind: Exclude<AddressClass, 'public'>];

const ipv4Ranges: readonly Range[] = [
  [[0], 8, 'unspecified'], // "this network", incl. 0.0.0.0
  [[10], 8, 'private'],
  [[100, 64], 10, 'cgnat'],
  [[127], 8, 'loopback'],
  [[169, 254], 16, 'link-local'], // incl. the instance metadata endpoint 169.254.169.254
  [[172, 16], 12, 'private'],
  [[192, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2], 24, 'reserved'], // documentation
  [[192, 88, 99], 24, 'reserved'], // 6to4 relay anycast
  [[192, 168], 16, 'private'],
  [[198, 18], 15, 'reserved'], // benchmarking
  [[198, 51, 100], 24, 'reserved'],
  [[203, 0, 113], 24, 'reserved'],
  [[224], 4, 'multicast'],
  [[240], 4, 'reserved'], // incl. broadcast 255.255.255.255
];

const ipv6Ranges: readonly Range[] = [
  [[0xfc], 7, 'private'], // unique local
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'], // deprecated site-local
  [[0xff], 8, 'multicast'],
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'reserved'], // documentation
  [[0x01, 0, 0, 0, 0, 0, 0, 0], 64, 'reserved'], // discard-only
  [[0x20, 0x01, 0, 0], 32, 'reserved'], // Teredo: tunnels to an address we cannot see
];

const classifyIpv4Bytes = (bytes: Uint8Array): AddressClass => {
  for (const [prefix, bits, kind] of ipv4Ranges) if (inPrefix(bytes, prefix, bits)) return kind;
  return 'public';
};

const classifyIpv6Bytes = (bytes: Uint8Array): AddressClass => {
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  if (zeros(0, 16)) return 'unspecified';
  if (zeros(0, 15) && bytes[15] === 1) return 'loopback';
  // IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96: the IPv4 address decides.
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return classifyIpv4Bytes(bytes.slice(12));
  if (zeros(0, 12)) return classifyIpv4Bytes(bytes.slice(12));
  // NAT64 well-known prefix 64:ff9b::/96 and the local-use 64:ff9b:1::/48 translate to IPv4.
  if (inPrefix(bytes, [0, 0x64, 0xff, 0x9b], 32)) return classifyIpv4Bytes(bytes.slice(12));
  // 6to4 2002:V4ADDR::/48 embeds the IPv4 address of the relay.
  if (inPrefix(bytes, [0x20, 0x02], 16)) {
    const embedded = classifyIpv4Bytes(bytes.slice(2, 6));
    if (embedded !== 'public') return embedded;
  }
  for (const [prefix, bits, kind] of ipv6Ranges) if (inPrefix(bytes, prefix, bits)) return kind;
  return 'public';
};

/** Classifies an IP address literal (IPv4 dotted quad or IPv6, brackets allowed); undefined if it is not one. */
export const classifyAddress = (address: string): AddressClass | undefined => {
  const v4 = parseIpv4(address);
  if (v4) return classifyIpv4Bytes(v4);
  const v6 = parseIpv6(address);
  return v6 ? classifyIpv6Bytes(v6) : undefined;
};

/** Whether the policy lets a request go to an address of this class. */
export const isAllowedAddress = (kind: AddressClass, policy: WebhookPolicy): boolean =>
  kind === 'public' || (kind === 'loopback' && policy.allowLoopback);

export type WebhookUrlProblem =
  | 'not-a-url'
  | 'scheme'
  | 'https-required'
  | 'credentials-in-url'
  | 'forbidden-address';

export type WebhookUrlCheck =
  | {
      readonly ok: true;
      readonly url: URL;
      /** The host without IPv6 brackets, as DNS or the socket wants it. */
      readonly host: string;
      /** Set when the host is an IP literal (after URL normalization of decimal/octal/hex spellings). */
      readonly literal?: AddressClass;
    }
  | { readonly ok: false; readonly problem: WebhookUrlProblem; readonly addressClass?: AddressClass };

const loopbackNames = /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$|\.localhost$/i;

/**
 * Everything that can be judged about a webhook URL without DNS: an absolute http(s) URL (https
 * unless the policy allows http), no `user:pass@`, and, when the host is an IP literal or a
 * loopback name, an address the policy allows. WHATWG URL parsing turns `2130706433`, `0x7f.1`
 * and `0177.0.0.1` into `127.0.0.1` before the check, so odd spellings cannot slip through.
 */
export const checkWebhookUrl = (raw: string, policy: WebhookPolicy): WebhookUrlCheck => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, problem: 'not-a-url' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, problem: 'scheme' };
  if (url.protocol === 'http:' && !policy.allowHttp) return { ok: false, problem: 'https-required' };
  if (url.username !== '' || url.password !== '') return { ok: false, problem: 'credentials-in-url' };
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (host === '') return { ok: false, problem: 'not-a-url' };
  const literal = classifyAddress(host);
  const kind = literal ?? (loopbackNames.test(host.replace(/\.$/, '')) ? 'loopback' : undefined);
  if (kind !== undefined && !isAllowedAddress(kind, policy)) {
    return { ok: false, problem: 'forbidden-address', addressClass: kind };
  }
  return { ok: true, url, host, ...(literal ? { literal } : {}) };
};
