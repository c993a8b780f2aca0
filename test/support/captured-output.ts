import { vi } from 'vitest';

/** Everything written to stdout and stderr until `restore()`: where Lambda's log lines and EMF go. */
export interface CapturedOutput {
  /** The chunks written, in order; empty it to start over. */
  readonly chunks: string[];
  /** The lines that are JSON objects (Powertools log lines, EMF), parsed. */
  jsonLines(): Array<Record<string, unknown>>;
  restore(): void;
}

export const captureOutput = (): CapturedOutput => {
  const chunks: string[] = [];
  const capture = (chunk: unknown): boolean => {
    chunks.push(String(chunk));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(capture),
    vi.spyOn(process.stderr, 'write').mockImplementation(capture),
  ];
  return {
    chunks,
    jsonLines: () =>
      chunks
        .flatMap((chunk) => chunk.split('\n'))
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    restore: () => {
      for (const spy of spies) spy.mockRestore();
    },
  };
};
