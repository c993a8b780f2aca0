/**
 * A map that keeps at most `maxEntries` keys: `set` makes its key the newest and drops the oldest
 * beyond the bound (Map iteration is insertion order). The per-container memories of the write
 * path use it: the write-through's projected revisions, the fan-out's recent push configs, the
 * sealer's opened data keys.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly maxEntries: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldest);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
