import { describe, expect, it } from 'vitest';
import LRUCache from '../../infra/bundle-stubs/lru-cache.ts';

/** The bundles' LRU (decision 0043), for what the SDK's endpoint cache calls: get, set, has, peek, clear. */
describe('the small LRU of the bundles', () => {
  it('evicts the least recently used entry; peek and has do not count as a use', () => {
    const cache = new LRUCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now the most recent
    cache.set('c', 3); // evicts b
    expect([cache.has('a'), cache.has('b'), cache.has('c')]).toEqual([true, false, true]);
    expect(cache.peek('a')).toBe(1); // no use: a stays the oldest
    cache.set('d', 4); // evicts a
    expect([cache.has('a'), cache.get('c'), cache.get('d')]).toEqual([false, 3, 4]);
    cache.set('c', 5); // replacing is a use
    cache.set('e', 6); // evicts d
    expect([cache.get('c'), cache.has('d'), cache.size]).toEqual([5, false, 2]);
    cache.clear();
    expect([cache.has('c'), cache.get('e'), cache.size]).toEqual([false, undefined, 0]);
  });
});
