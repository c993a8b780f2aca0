import { describe, expect, it } from 'vitest';
import { type ResolvedAddress, vetTarget } from '../../shared/adapters/ssrf-guard.ts';
import { deliveryBackoffSeconds } from '../../shared/domain/push.ts';
import {
  type AddressClass,
  checkWebhookUrl,
  classifyAddress,
  strictWebhookPolicy,
  webhookPolicyFor,
} from '../../shared/domain/webhook-address.ts';

/** The SSRF guard's address rules (DESIGN.md §8), as a table. */

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
