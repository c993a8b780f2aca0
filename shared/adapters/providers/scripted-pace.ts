/**
 * The pace of the scripted models' streamed answers (docs/configuration.md `providers`, `paceMs`):
 * word by word, a pause before each, as a streaming model writes. Shared by the `stream` behaviour
 * (scripted-provider.ts) and the `call-tool` model (scripted-tool-model.ts, in the tool sources'
 * bundle file), so it lives apart from both.
 */

/** The pause before each word (about 20 words a second). */
export const defaultStreamPaceMs = 50;

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export type ScriptedSleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const abortableSleep: ScriptedSleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });

/** A text's words, each with the whitespace before the next: joined, they are the text. */
export const wordsOf = (text: string): string[] => text.split(/(?<=\s)(?=\S)/);
