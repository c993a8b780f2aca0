import { VersionConflictError } from '../../domain/errors.ts';
import type { AnswerProgress, TaskRepository } from '../../domain/ports.ts';
import { answerOutcome, ceilingsForAttempt } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { redactText } from '../../domain/redaction.ts';
import { taskAndRunWrite } from '../../domain/row-writes.ts';
import { advanceTask, type RunRecord, reviseRun } from '../../domain/task.ts';
import { failpoint } from '../operations/failpoints.ts';
import { commitRevision, type RunDeps } from './run-context.ts';
import { leaseUntilFrom } from './run-lease.ts';

/**
 * Progressive output (docs/architecture.md, "Progressive output"): while the model writes, the
 * run commits its answer so far as revisions of the task — each a conditional write of the task
 * row under the run lock (I-LOCK), sealed, projected like any revision (I-COMMITTED, I-ORDER) —
 * at the profile's cadence: at most once per `cadence.ms`, sooner once `cadence.bytes` of new text
 * wait. Nothing reaches a channel before it is committed; the completing write still holds the
 * whole result (I-RESULT), and the text after the last chunk arrives with it.
 */

/** What a write between chunks (`fenceRun`) answers. */
type FenceOutcome = Awaited<ReturnType<TaskRepository['fenceRun']>>;

export interface ChunkCadence {
  readonly ms: number;
  readonly bytes: number;
}

/** The run as its chunks left it: the attempt's completion continues from it. */
export interface ChunkedState {
  readonly run: RunRecord;
  readonly task: StoredTask;
}

/**
 * What a run's chunks on this attempt may hold: the strictest answer level its run could still
 * reach — its ceiling tightened by every provider left in its chain. A tightening cannot take back
 * what the journal and the webhooks already carry (I-TIGHTEN), so a chunk never holds more than a
 * tightening would leave: `redacted` text when a fallback could tighten to `redacted` (even while
 * the primary answers at `full`; its completion then holds the full result), and no chunk at all
 * when one could tighten to `metadata`/`none`.
 */
export const chunkLevelOf = (
  deps: Pick<RunDeps, 'config'>,
  run: RunRecord,
  providersLeft: readonly string[],
): 'full' | 'redacted' | undefined => {
  let ceilings = { audit: run.auditCeiling, answer: run.answerCeiling };
  for (const providerId of providersLeft)
    ceilings = ceilingsForAttempt(ceilings, deps.config.providers[providerId]?.privacyLevel);
  const outcome = answerOutcome(ceilings.answer);
  if (outcome === 'not-retainable') return undefined;
  return outcome === 'keep-redacted' ? 'redacted' : 'full';
};

/** The answer's artifact: the id every provider gives its answer (`<runId>-artifact-0`). */
export const answerArtifactId = (runId: string): string => `${runId}-artifact-0`;

/**
 * One attempt's chunks. `onAnswer` is the provider's synchronous callback; the writes run one at a
 * time behind it. A chunk that loses its condition (a cancel, a reap) ends the chunks: the
 * attempt's completion meets the same conflict and reads what happened. A new attempt (a
 * fallback after a broken stream) starts a new `AnswerChunks`: its first chunk replaces the
 * artifact (`from` 0), so the broken answer is never continued as if it were one text.
 */
export class AnswerChunks {
  private text = '';
  /** The text the last chunk committed, as stored (redacted at `redacted`). */
  private shown = '';
  private waitingBytes = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;
  /** What stopped the chunks unexpectedly (a crash injected after a chunk): `close` throws it. */
  private failure: { readonly error: unknown } | undefined;
  /** Chunks committed by this attempt. */
  committed = 0;

  constructor(
    private readonly deps: RunDeps,
    private state: ChunkedState,
    private readonly cadence: ChunkCadence,
    /** The level the chunks are stored at (`chunkLevelOf`). */
    private readonly level: 'full' | 'redacted',
  ) {}

  readonly onAnswer = (progress: AnswerProgress): void => {
    if (this.stopped) return;
    if (progress.kind === 'reset') {
      this.text = '';
      return;
    }
    this.text += progress.text;
    this.waitingBytes += Buffer.byteLength(progress.text);
    if (this.waitingBytes >= this.cadence.bytes) this.flush();
    else if (this.timer === undefined) this.timer = setTimeout(() => this.flush(), this.cadence.ms);
  };

  /**
   * Runs another write of the run row between chunk writes (a tool call's fence, I-EFFECT): after
   * the chunk in flight, with the run as the last chunk left it (each chunk moves its version).
   * When `write` returns 'fenced', the run keeps `kept` (version unchanged), so the chunks after it
   * write it on.
   */
  async between(
    write: (run: RunRecord) => Promise<FenceOutcome>,
    kept: Partial<Omit<RunRecord, 'status' | 'version' | 'runId' | 'taskId'>>,
  ): Promise<FenceOutcome> {
    const turn = this.writing.then(async () => {
      const result = await write(this.state.run);
      if (result === 'fenced')
        this.state = { ...this.state, run: reviseRun(this.state.run, kept, { keepVersion: true }) };
      return result;
    });
    this.writing = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /** Stops committing and waits for the chunk in flight: the state the completion continues from. */
  async close(): Promise<ChunkedState> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    if (this.failure !== undefined) throw this.failure.error;
    return this.state;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.waitingBytes = 0;
    const text = this.storable(this.text);
    this.writing = this.writing
      .then(() => this.commit(text))
      .catch((error: unknown) => {
        this.stopped = true;
        this.failure ??= { error };
      });
  }

  /**
   * The text a chunk may store: at `redacted` it is redacted, and the last word waits for the
   * whitespace after it, so a secret is never committed half-written (too short for its pattern).
   */
  private storable(text: string): string {
    if (this.level !== 'redacted') return text;
    const end = text.search(/\s\S*$/);
    return redactText(end < 0 ? '' : text.slice(0, end + 1));
  }

  private async commit(text: string): Promise<void> {
    if (this.stopped || text === '' || text === this.shown) return;
    const { run, task } = this.state;
    const now = this.deps.clock.now();
    const artifactId = answerArtifactId(run.runId);
    const sealed = await this.deps.codec.seal(task.taskId, {
      artifacts: [{ artifactId, name: 'answer', parts: [{ text }] }],
    });
    const chunkTask = advanceTask(task, 'TASK_STATE_WORKING', now, {
      sealedArtifacts: sealed.sealedArtifacts,
      artifactCount: 1,
      // The text earlier chunks showed, when this one continues it; else it replaces the artifact.
      answerChunk: { artifactId, from: text.startsWith(this.shown) ? this.shown.length : 0 },
    });
    // The stored answer changes: the run's version moves (I-LOCK); the write carries the lease on.
    // It writes only those of the run, so a `settled` mark a push notification left while the run
    // waits for a remote task stays for the park (docs/reliability.md "Delegated calls").
    const chunkRun = reviseRun(run, { leaseUntil: leaseUntilFrom(this.deps, now) });
    try {
      await commitRevision(this.deps, {
        row: { ...taskAndRunWrite(task, chunkTask, run, chunkRun), runChanges: 'version-and-lease' },
      });
    } catch (error) {
      this.stopped = true;
      if (error instanceof VersionConflictError) return;
      // A chunk that could not be stored leaves the answer to the completing write.
      this.deps.logger?.info('answer chunk not committed', {
        taskId: task.taskId,
        runId: run.runId,
        error: error instanceof Error ? error.name : 'unknown',
      });
      return;
    }
    this.state = { run: chunkRun, task: chunkTask };
    this.shown = text;
    this.committed += 1;
    failpoint('executor.afterChunk');
  }
}
