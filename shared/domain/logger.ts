/**
 * The one logging port. Fields are ids, counts, states and error names: never message, artifact
 * or model content (docs/operations.md, "Where to look"). A dependency names the levels it writes, e.g.
 * `Pick<Logger, 'warn'>`; each function's adapter is shared/adapters/powertools-logger.ts.
 */
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}
