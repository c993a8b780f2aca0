/**
 * A small LRU for `mnemonist/lru-cache` in deployed bundles (decision 0043). The DynamoDB
 * client's endpoint-discovery cache (`@aws-sdk/endpoint-cache`) is its only importer and uses
 * `get`, `set`, `has`, `peek` and `clear`; mnemonist's full cache and its `obliterator`
 * dependency were ~7 KB of every function that talks to DynamoDB. A Map keeps insertion order,
 * so its first key is the least recently used one.
 */
export default class LRUCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    if (!this.entries.has(key)) return undefined;
    const value = this.entries.get(key) as V;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const [oldest] = this.entries.keys();
      this.entries.delete(oldest as K);
    }
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
