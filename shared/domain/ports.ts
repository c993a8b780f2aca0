/**
 * Ports: what the use cases need from the outside world, in domain nouns.
 * Adapters (shared/adapters) implement them with a technology; tests use fakes.
 */

/** Which stored field a sealed blob belongs to. Bound into the AEAD so a moved blob fails to open. */
export interface SealContext {
  readonly taskId: string;
  readonly field: string;
}

/** Envelope encryption behind two methods (DESIGN.md §6). Failures reject: callers fail closed. */
export interface Sealer {
  seal(plaintext: Uint8Array, context: SealContext): Promise<Uint8Array>;
  open(blob: Uint8Array, context: SealContext): Promise<Uint8Array>;
}

export interface Clock {
  now(): Date;
}

export interface IdGenerator {
  newId(): string;
}

/** Wakes an executor for a run. The run row is the state; the message carries only ids. */
export interface RunQueue {
  enqueue(message: RunMessage): Promise<void>;
}

export interface RunMessage {
  readonly taskId: string;
  readonly runId: string;
}
