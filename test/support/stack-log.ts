import { afterAll, beforeEach, onTestFinished } from 'vitest';

/**
 * The embedded stack's log in tests (a setup file of the projects that start it). Its functions
 * log JSON lines through Powertools (`{"level":"INFO",…}` on stdout and stderr); lines below
 * A2A_TEST_LOG (default `warn`) are not printed as they come but kept, and a failing test prints
 * what was kept since the previous test ended — the lines of its own hooks and body. A file whose
 * `beforeAll` fails prints what it kept at its end. `A2A_TEST_LOG=info` (or `debug`) prints
 * everything as it comes, and keeps nothing. What the functions log at all is POWERTOOLS_LOG_LEVEL.
 *
 * A test that provokes failures on purpose (failpoints, a tampered blob, a receiver that fails)
 * calls `expectStackWarnings()`: its stack's WARN and ERROR lines are what it provokes, so they are
 * kept for a failure instead of printed. Metric lines (CloudWatch EMF, `{"_aws":…}`) count as INFO.
 */

const levels = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL'] as const;
type Level = (typeof levels)[number];

const rank = (level: string): number => levels.indexOf(level.toUpperCase() as Level);

const asked = (process.env.A2A_TEST_LOG ?? 'warn').toUpperCase();
let threshold = rank(asked) >= 0 ? rank(asked) : rank('WARN');
const keeping = threshold > rank('DEBUG');

/** The kept lines are bounded: the oldest go first, and the print says how many went. */
const maxKeptChars = 4 * 1024 * 1024;
let kept: string[] = [];
let keptChars = 0;
let dropped = 0;

const logLine = /^\{"level":"([A-Z]+)"/;
const metricLine = /^\{"_aws":/;

/** A line's level: its own, INFO for a metric line, none for anything else (always printed). */
const levelOf = (line: string): string | undefined =>
  logLine.exec(line)?.[1] ?? (metricLine.test(line) ? 'INFO' : undefined);

const keep = (line: string): void => {
  kept.push(line);
  keptChars += line.length;
  while (keptChars > maxKeptChars && kept.length > 1) {
    keptChars -= (kept.shift() as string).length;
    dropped += 1;
  }
};

const forget = (): void => {
  kept = [];
  keptChars = 0;
  dropped = 0;
};

type Write = typeof process.stdout.write;

const filtered = (stream: NodeJS.WriteStream): Write => {
  const write = stream.write.bind(stream) as Write;
  return ((chunk: unknown, ...rest: unknown[]) => {
    const text =
      typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : undefined;
    if (text === undefined || levelOf(text) === undefined) {
      return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }
    const shown: string[] = [];
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const level = levelOf(line);
      if (level !== undefined && rank(level) >= 0 && rank(level) < threshold) keep(line);
      else shown.push(line);
    }
    const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    if (shown.length === 0) {
      callback?.();
      return true;
    }
    return write(`${shown.join('\n')}\n`, callback);
  }) as Write;
};

const stderrWrite = process.stderr.write.bind(process.stderr) as Write;

const printKept = (what: string): void => {
  if (kept.length === 0) return;
  const skipped = dropped > 0 ? ` (the ${dropped} oldest lines dropped)` : '';
  stderrWrite(
    `\n── the stack's log below ${levels[threshold]} for ${what}${skipped}; A2A_TEST_LOG=info prints it as it comes ──\n` +
      `${kept.join('\n')}\n── end of the stack's log for ${what} ──\n`,
  );
  forget();
};

/** For a test file that provokes the stack's warnings and errors on purpose: keep them too. */
export const expectStackWarnings = (): void => {
  if (keeping && threshold <= rank('ERROR')) threshold = rank('CRITICAL');
};

if (keeping) {
  process.stdout.write = filtered(process.stdout);
  process.stderr.write = filtered(process.stderr);

  // Runs after the test's own afterEach hooks, so a failing hook counts as a failed test.
  beforeEach(() => {
    onTestFinished(({ task }) => {
      if (task.result?.state === 'fail') printKept(`the failed test "${task.fullName}"`);
      else forget();
    });
  });
  // biome-ignore lint/correctness/noEmptyPattern: vitest passes the suite second and wants the context destructured.
  afterAll(({}, suite) => {
    if (suite.result?.state === 'fail') printKept(`the failed file ${suite.name}`);
    forget();
  });
}
