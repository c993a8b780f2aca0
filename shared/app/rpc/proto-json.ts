import type { Artifact, JsonValue, Message } from '../../domain/a2a.ts';

/**
 * ProtoJSON for outgoing values. The domain already holds camelCase values in the proto's JSON
 * shape (shared/domain/a2a.ts), so serialization only drops what JSON cannot say: `undefined`
 * (an unset field is omitted, never `null`), and turns the few non-JSON values into their
 * ProtoJSON spelling (Timestamp, bytes, int64).
 */

/** ProtoJSON Timestamp: RFC 3339 in UTC with `Z` and milliseconds, e.g. `2026-01-01T00:00:00.000Z`. */
export const formatTimestamp = (value: Date | string | number): string => {
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) throw new RangeError('Not a timestamp');
  return date.toISOString();
};

/** Converts an outgoing value to plain JSON: unset fields dropped, Date → Timestamp, bytes → base64. */
export const toProtoJson = (value: unknown): JsonValue => {
  const json = convert(value);
  return json === undefined ? null : json;
};

const convert = (value: unknown): JsonValue | undefined => {
  if (value === null) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      return value.toString(); // int64 is a string in ProtoJSON
    case 'object':
      return convertObject(value);
    default:
      return undefined; // undefined, functions, symbols: not JSON, so the field is unset
  }
};

const convertObject = (value: object): JsonValue | undefined => {
  if (value instanceof Date) return formatTimestamp(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (const item of value) {
      const json = convert(item);
      if (json !== undefined) items.push(json);
    }
    return items;
  }
  const entries: [string, JsonValue][] = [];
  for (const [key, item] of Object.entries(value)) {
    const json = convert(item);
    if (json !== undefined) entries.push([key, json]);
  }
  return Object.fromEntries(entries);
};

/**
 * `historyLength` (docs/protocol.md §4): unset → unchanged; 0 → `history` omitted; N → the N most
 * recent messages (the history is chronological).
 */
export const applyHistoryLength = <T extends { history?: Message[] }>(task: T, historyLength?: number): T => {
  if (historyLength === undefined || task.history === undefined) return task;
  const { history, ...rest } = task;
  return (historyLength <= 0 ? rest : { ...rest, history: history.slice(-historyLength) }) as T;
};

/** `includeArtifacts` (ListTasks, docs/protocol.md §6): false → the field is omitted; true → present, even as `[]`. */
export const applyIncludeArtifacts = <T extends { artifacts?: Artifact[] }>(
  task: T,
  includeArtifacts: boolean,
): T => {
  const { artifacts, ...rest } = task;
  return (includeArtifacts ? { ...rest, artifacts: artifacts ?? [] } : rest) as T;
};
