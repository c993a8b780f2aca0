import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isExpired } from '../../shared/domain/task.ts';

describe('isExpired (I-PURGE: reads treat expired items as absent before TTL deletes them)', () => {
  const at = (iso: string): Date => new Date(iso);
  const epoch = (iso: string): number => Math.floor(Date.parse(iso) / 1000);

  it('is expired from the second the retention passes, not before', () => {
    const expiresAt = epoch('2026-12-01T00:00:00Z');
    expect(isExpired(expiresAt, at('2026-11-30T23:59:59.999Z'))).toBe(false);
    expect(isExpired(expiresAt, at('2026-12-01T00:00:00.000Z'))).toBe(true);
    expect(isExpired(expiresAt, at('2026-12-01T00:00:00.500Z'))).toBe(true);
    expect(isExpired(expiresAt, at('2027-01-01T00:00:00Z'))).toBe(true);
  });

  it('agrees with whole-second comparison for every instant', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_000_000_000 }),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        (expiresAt, ms) => {
          expect(isExpired(expiresAt, new Date(ms))).toBe(expiresAt <= Math.floor(ms / 1000));
        },
      ),
    );
  });
});
