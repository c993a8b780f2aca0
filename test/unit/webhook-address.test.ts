import { describe, expect, it } from 'vitest';
import { guardedPost, type ResolvedAddress, vetTarget } from '../../shared/adapters/ssrf-guard.ts';
import { deliveryBackoffSeconds } from '../../shared/domain/push.ts';
import {
  type AddressClass,
  checkWebhookUrl,
  classifyAddress,
  strictWebhookPolicy,
  webhookPolicyFor,
} from '../../shared/domain/webhook-address.ts';

/** The SSRF guard's address rules (docs/security.md), as a table. */

const addresses: [string, AddressClass | undefined][] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.128.0.1', 'public'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['0.0.0.0', 'unspecified'],
  ['255.255.255.255', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['8.8.8.8', 'public'],
  ['93.184.216.34', 'public'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['::', 'unspecified'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'link-local'],
  ['2002:7f00:1::1', 'loopback'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['2606:4700:4700::1111', 'public'],
  ['1::2::3', undefined],
  ['1:2:3:4:5:6:7:8:9', undefined],
  ['example.com', undefined],
  ['256.1.1.1', undefined],
];

describe('classifyAddress', () => {
  it.each(addresses)('%s → %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

const local = webhookPolicyFor(true, undefined);
const localNoLoopback = webhookPolicyFor(true, false);

describe('checkWebhookUrl', () => {
  it.each([
    // decimal, octal, hex and short IPv4 spellings are normalized by the URL parser first
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.0.0.1/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://0xa9fea9fe/', 'link-local'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://[::1]:8080/hook', 'loopback'],
    ['http://localhost:3000/', 'loopback'],
    ['http://app.localhost/', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local'],
    ['http://[fd00::1]/', 'private'],
    ['http://100.100.100.100/', 'cgnat'],
  ])('refuses %s (%s) when loopback is not allowed', (url, kind) => {
    const check = checkWebhookUrl(url, localNoLoopback);
    expect(check).toEqual({ ok: false, problem: 'forbidden-address', addressClass: kind });
  });

  it('allows loopback only in local mode, and https only outside it', () => {
    expect(checkWebhookUrl('http://127.0.0.1:9/hook', local).ok).toBe(true);
    expect(checkWebhookUrl('http://localhost:9/hook', local).ok).toBe(true);
    expect(checkWebhookUrl('http://10.0.0.1/hook', local)).toMatchObject({
      ok: false,
      addressClass: 'private',
    });
    expect(checkWebhookUrl('http://example.com/hook', strictWebhookPolicy)).toMatchObject({
      ok: false,
      problem: 'https-required',
    });
    expect(checkWebhookUrl('https://127.0.0.1/hook', strictWebhookPolicy)).toMatchObject({
      ok: false,
      problem: 'forbidden-address',
    });
    expect(checkWebhookUrl('https://example.com/hook', strictWebhookPolicy).ok).toBe(true);
    expect(webhookPolicyFor(false, true)).toEqual(strictWebhookPolicy);
  });

  it('refuses other schemes, credentials in the URL and non-URLs', () => {
    expect(checkWebhookUrl('ftp://example.com/', local)).toMatchObject({ ok: false, problem: 'scheme' });
    expect(checkWebhookUrl('file:///etc/passwd', local)).toMatchObject({ ok: false, problem: 'scheme' });
    expect(checkWebhookUrl('https://u:p@example.com/', local)).toMatchObject({
      ok: false,
      problem: 'credentials-in-url',
    });
    expect(checkWebhookUrl('not a url', local)).toMatchObject({ ok: false, problem: 'not-a-url' });
  });
});

describe('vetTarget with an injected resolver', () => {
  const resolver =
    (answers: Record<string, ResolvedAddress[]>) =>
    async (hostname: string): Promise<readonly ResolvedAddress[]> => {
      const found = answers[hostname];
      if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return found;
    };
  const dns = resolver({
    'public.example': [{ address: '93.184.216.34', family: 4 }],
    'private.example': [{ address: '10.1.2.3', family: 4 }],
    'metadata.example': [{ address: '169.254.169.254', family: 4 }],
    'mixed.example': [
      { address: '93.184.216.34', family: 4 },
      { address: '192.168.0.10', family: 4 },
    ],
    'mapped.example': [{ address: '::ffff:127.0.0.1', family: 6 }],
    'v6-private.example': [{ address: 'fd00::5', family: 6 }],
    'loopback.example': [{ address: '127.0.0.1', family: 4 }],
  });

  it.each([
    ['private.example', 'private'],
    ['metadata.example', 'link-local'],
    ['mixed.example', 'private'],
    ['mapped.example', 'loopback'],
    ['v6-private.example', 'private'],
  ])('refuses a name resolving to an internal address: %s', async (host, kind) => {
    expect(await vetTarget(`https://${host}/hook`, strictWebhookPolicy, dns)).toEqual({
      ok: false,
      kind: 'refused',
      reason: 'forbidden-address',
      addressClass: kind,
    });
  });

  it('pins a public name to its vetted address; a DNS failure is a retryable failure', async () => {
    const vetted = await vetTarget('https://public.example/hook', strictWebhookPolicy, dns);
    expect(vetted).toMatchObject({ ok: true, host: 'public.example', address: { address: '93.184.216.34' } });
    expect(await vetTarget('https://nowhere.example/', strictWebhookPolicy, dns)).toEqual({
      ok: false,
      kind: 'unresolved',
      reason: 'dns: ENOTFOUND',
    });
    expect(await vetTarget('http://loopback.example:8080/', local, dns)).toMatchObject({ ok: true });
    expect(await vetTarget('http://loopback.example:8080/', localNoLoopback, dns)).toMatchObject({
      ok: false,
      addressClass: 'loopback',
    });
  });
});

describe('deliveryBackoffSeconds', () => {
  it('doubles from the base and stops at the cap', () => {
    expect([1, 2, 3, 4, 9, 10, 30].map((attempt) => deliveryBackoffSeconds(attempt, 2))).toEqual([
      2, 4, 8, 16, 300, 300, 300,
    ]);
  });
});

/**
 * The SSRF table of issue 7, end to end through `vetTarget` and `guardedPost` under the deployed
 * policy (https only, no loopback) and the local policy without loopback: every URL spelling and
 * every DNS answer of an internal address is refused before any socket opens. The resolver is a
 * fake, so no lookup leaves the process; refused requests never connect, so no traffic goes
 * anywhere (the connect-to-the-vetted-address and no-redirect halves run against loopback
 * servers in test/integration/ssrf-guard.test.ts).
 */
describe('the SSRF table (issue 7)', () => {
  const urlForms: [url: string, kind: AddressClass][] = [
    ['https://127.0.0.1/', 'loopback'],
    ['https://127.255.255.255/', 'loopback'],
    ['https://0x7f000001/', 'loopback'],
    ['https://017700000001/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://１２７.０.０.１/', 'loopback'],
    ['https://LOCALHOST./', 'loopback'],
    ['https://localhost.localdomain/', 'loopback'],
    ['https://[::1]/', 'loopback'],
    ['https://[0:0:0:0:0:0:0:1]/', 'loopback'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://[::ffff:7f00:1]/', 'loopback'],
    ['https://[0:0:0:0:0:ffff:127.0.0.1]/', 'loopback'],
    ['https://[64:ff9b::7f00:1]/', 'loopback'],
    ['https://[2002:7f00:1::]/', 'loopback'],
    ['https://10.0.0.1/', 'private'],
    ['https://172.16.0.1/', 'private'],
    ['https://192.168.1.1/', 'private'],
    ['https://3232235777/', 'private'],
    ['https://0300.0250.1.1/', 'private'],
    ['https://0xc0.0xa8.1.1/', 'private'],
    ['https://[::ffff:10.0.0.1]/', 'private'],
    ['https://[64:ff9b::10.0.0.1]/', 'private'],
    ['https://[fc00::1]/', 'private'],
    ['https://[fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]/', 'private'],
    ['https://[fec0::1]/', 'private'],
    ['https://169.254.169.254/latest/meta-data/', 'link-local'],
    ['https://2852039166/', 'link-local'],
    ['https://0251.0376.0251.0376/', 'link-local'],
    ['https://0xa9.0xfe.0xa9.0xfe/', 'link-local'],
    ['https://[::ffff:169.254.169.254]/', 'link-local'],
    ['https://[::ffff:a9fe:a9fe]/', 'link-local'],
    ['https://[::169.254.169.254]/', 'link-local'],
    ['https://[64:ff9b::169.254.169.254]/', 'link-local'],
    ['https://[64:ff9b:1::a9fe:a9fe]/', 'link-local'],
    ['https://[2002:a9fe:a9fe::1]/', 'link-local'],
    ['https://[fe80::1]/', 'link-local'],
    ['https://[febf:ffff::1]/', 'link-local'],
    ['https://100.64.0.0/', 'cgnat'],
    ['https://100.127.255.255/', 'cgnat'],
    ['https://[::ffff:100.100.100.200]/', 'cgnat'],
    ['https://0.0.0.0/', 'unspecified'],
    ['https://0/', 'unspecified'],
    ['https://[::]/', 'unspecified'],
    ['https://224.0.0.251/', 'multicast'],
    ['https://[ff02::1]/', 'multicast'],
    ['https://255.255.255.255/', 'reserved'],
    ['https://[2001::a9fe:a9fe]/', 'reserved'],
  ];
  const policies = [
    ['deployed', strictWebhookPolicy],
    ['local without loopback', localNoLoopback],
  ] as const;
  const noDns = async (): Promise<readonly ResolvedAddress[]> => {
    throw new Error('an IP literal must not be resolved');
  };

  it.each(urlForms)('refuses %s (%s) in every policy, without DNS', async (url, kind) => {
    for (const [, policy] of policies) {
      expect(await vetTarget(url, policy, noDns)).toEqual({
        ok: false,
        kind: 'refused',
        reason: 'forbidden-address',
        addressClass: kind,
      });
    }
  });

  const dnsAnswers: [answer: string, family: 4 | 6, kind: AddressClass][] = [
    ['127.0.0.1', 4, 'loopback'],
    ['::1', 6, 'loopback'],
    ['::ffff:127.0.0.1', 6, 'loopback'],
    ['64:ff9b::7f00:1', 6, 'loopback'],
    ['10.20.30.40', 4, 'private'],
    ['fd12::1', 6, 'private'],
    ['169.254.169.254', 4, 'link-local'],
    ['fe80::1%eth0', 6, 'link-local'],
    ['::ffff:169.254.169.254', 6, 'link-local'],
    ['64:ff9b::a9fe:a9fe', 6, 'link-local'],
    ['100.64.1.2', 4, 'cgnat'],
    ['0.0.0.0', 4, 'unspecified'],
    ['239.1.2.3', 4, 'multicast'],
    // An answer that is no address at all is treated as forbidden, never as public.
    ['not-an-address', 4, 'reserved'],
  ];

  it.each(dnsAnswers)(
    'refuses a name whose DNS answer is %s (%s family) → %s',
    async (answer, family, kind) => {
      for (const [, policy] of policies) {
        for (const answers of [
          [{ address: answer, family }],
          // One forbidden address among public ones is enough to refuse (no "first answer wins").
          [
            { address: '93.184.216.34', family: 4 as const },
            { address: answer, family },
          ],
        ]) {
          expect(await vetTarget('https://hook.example/', policy, async () => answers)).toEqual({
            ok: false,
            kind: 'refused',
            reason: 'forbidden-address',
            addressClass: kind,
          });
        }
      }
    },
  );

  it('refuses before connecting: guardedPost reports the refusal and resolves once', async () => {
    let lookups = 0;
    const metadata = async () => {
      lookups += 1;
      return [{ address: '169.254.169.254', family: 4 as const }];
    };
    const result = await guardedPost(
      { url: 'https://rebind.example/hook', headers: {}, body: '{}' },
      { policy: strictWebhookPolicy, resolve: metadata, timeoutMs: 1_000 },
    );
    expect(result).toEqual({ kind: 'refused', reason: 'forbidden-address: link-local' });
    expect(lookups).toBe(1);
    for (const [url] of urlForms.slice(0, 5)) {
      expect(
        await guardedPost({ url, headers: {}, body: '{}' }, { policy: strictWebhookPolicy, resolve: noDns }),
      ).toEqual(expect.objectContaining({ kind: 'refused' }));
    }
  });
});
