import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../shared/domain/bounded-map.ts';

describe('BoundedMap', () => {
  it('keeps the newest keys up to its bound, dropping the oldest', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('makes a key set again the newest', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10);
    map.set('c', 3);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([10, undefined, 3]);
  });

  it('keeps nothing with a bound of 0, and deletes', () => {
    const none = new BoundedMap<string, number>(0);
    none.set('a', 1);
    expect(none.get('a')).toBeUndefined();
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.delete('a');
    expect(map.get('a')).toBeUndefined();
  });
});
