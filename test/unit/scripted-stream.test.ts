import { describe, expect, it } from 'vitest';
import { createProviderFor } from '../../functions/providers.ts';
import type { ScriptedSleep } from '../../shared/adapters/providers/scripted-pace.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { parseConfig } from '../../shared/config/config.ts';
import type { RuntimeEnv } from '../../shared/config/runtime-env.ts';
import { ProviderUnavailableError } from '../../shared/domain/errors.ts';
import type { AgentRequest, AnswerProgress } from '../../shared/domain/ports.ts';

/**
 * The scripted `stream` behaviour on a timer the test advances by hand: every pause is a
 * promise the test resolves, so the order of words against pauses is asserted without any
 * wall-clock wait.
 */
const manualTimer = () => {
  const pauses: Array<{ ms: number; resume: () => void }> = [];
  let requested = 0;
  let onRequest: (() => void) | undefined;
  const sleep: ScriptedSleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      pauses.push({ ms, resume: resolve });
      requested++;
      onRequest?.();
    });
  /** Resolves once `count` pauses have been asked for in all. */
  const asked = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (requested < count) return;
        onRequest = undefined;
        resolve();
      };
      onRequest = check;
      check();
    });
  /** Ends the oldest pause. */
  const tick = () => pauses.shift()?.resume();
  return { sleep, asked, tick, pauses };
};

const request = (text: string, overrides: Partial<AgentRequest> = {}): AgentRequest => ({
  runId: 'run-s',
  taskId: 'task-s',
  contextId: 'ctx-s',
  instructions: '',
  history: [{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text }] }],
  ...overrides,
});

/** What a run ends with: 'resolved', or the error it rejected with. */
const settled = (running: Promise<unknown>): Promise<unknown> =>
  running.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('scripted provider: stream', () => {
  it('writes one word per pause, in order, and completes with the whole echo', async () => {
    const timer = manualTimer();
    const provider = new ScriptedProvider('s', 'stream', { paceMs: 40, sleep: timer.sleep });
    const progress: AnswerProgress[] = [];
    const running = provider.run(request('one  two\nthree', { onAnswer: (p) => void progress.push(p) }));
    let settled = false;
    void running.then(() => {
      settled = true;
    });
    await timer.asked(1);
    expect(progress).toEqual([]);
    expect(timer.pauses.map((p) => p.ms)).toEqual([40]);
    timer.tick();
    await timer.asked(2);
    expect(progress).toEqual([{ kind: 'text', text: 'one  ' }]);
    timer.tick();
    await timer.asked(3);
    expect(progress.map((p) => (p.kind === 'text' ? p.text : '<reset>'))).toEqual(['one  ', 'two\n']);
    expect(settled).toBe(false);
    timer.tick();
    const result = await running;
    expect(progress.map((p) => (p.kind === 'text' ? p.text : '')).join('')).toBe('one  two\nthree');
    expect(result.outcome).toMatchObject({
      kind: 'completed',
      artifacts: [{ artifactId: 'run-s-artifact-0', parts: [{ text: 'one  two\nthree' }] }],
    });
  });

  it('keeps its pace without onAnswer and answers the same', async () => {
    const timer = manualTimer();
    const provider = new ScriptedProvider('s', 'stream', { sleep: timer.sleep });
    const running = provider.run(request('a b'));
    await timer.asked(1);
    timer.tick();
    await timer.asked(2);
    timer.tick();
    const plain = await running;
    const echoed = await new ScriptedProvider('s', 'echo').run(request('a b'));
    expect(plain.outcome).toEqual(echoed.outcome);
    expect(timer.pauses).toEqual([]);
  });

  it('breaks off as an unavailable provider after failAfterWords words', async () => {
    const timer = manualTimer();
    const provider = new ScriptedProvider('s', 'stream', { failAfterWords: 2, sleep: timer.sleep });
    const progress: AnswerProgress[] = [];
    const outcome = settled(provider.run(request('w1 w2 w3 w4', { onAnswer: (p) => void progress.push(p) })));
    await timer.asked(1);
    timer.tick();
    await timer.asked(2);
    timer.tick();
    expect(await outcome).toBeInstanceOf(ProviderUnavailableError);
    expect(progress).toEqual([
      { kind: 'text', text: 'w1 ' },
      { kind: 'text', text: 'w2 ' },
    ]);
  });

  it('stops mid-stream when the run is aborted, with the abort reason', async () => {
    const timer = manualTimer();
    const controller = new AbortController();
    const provider = new ScriptedProvider('s', 'stream', { sleep: timer.sleep });
    const outcome = settled(provider.run(request('x y z', { signal: controller.signal })));
    await timer.asked(1);
    timer.tick();
    await timer.asked(2);
    controller.abort(new DOMException('canceled', 'AbortError'));
    expect(await outcome).toMatchObject({ name: 'AbortError' });
  });

  it('is configured from the provider entry (pace and failure) through the composition', async () => {
    const config = parseConfig({
      providers: { s: { type: 'scripted', behavior: 'stream', paceMs: 0, failAfterWords: 1 } },
      profiles: { default: { name: 'x', description: 'x', providers: ['s'] } },
    });
    expect(config.providers.s).toEqual({
      type: 'scripted',
      behavior: 'stream',
      paceMs: 0,
      failAfterWords: 1,
    });
    expect(config.profiles.default?.output).toEqual({
      progressive: false,
      cadence: { ms: 1000, bytes: 4096 },
    });
    const progress: AnswerProgress[] = [];
    const provider = createProviderFor({ config } as RuntimeEnv)('s');
    await expect(
      provider.run(request('first second', { onAnswer: (p) => void progress.push(p) })),
    ).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(progress).toEqual([{ kind: 'text', text: 'first ' }]);
  });
});
