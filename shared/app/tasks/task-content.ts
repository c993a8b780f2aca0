import type { Artifact, Message } from '../../domain/a2a.ts';
import type { SuspendedRun } from '../../domain/approvals.ts';
import { SealingFailedError } from '../../domain/errors.ts';
import type { Sealer } from '../../domain/ports.ts';
import type { SealedBlob } from '../../domain/projection.ts';
import type { HistoryEntry } from '../../domain/task.ts';

/**
 * Seals and opens the content fields of a task. Each field is sealed on its own, bound to
 * (taskId, field), so the projector can copy blobs field by field and a moved blob fails to open.
 */

export const contentFields = {
  statusMessage: 'statusMessage',
  artifacts: 'artifacts',
  history: 'history',
} as const;
export type ContentField = keyof typeof contentFields;

type SuspensionField = `suspension:${string}`;
const suspensionField = (runId: string): SuspensionField => `suspension:${runId}`;
/** A history segment is bound to its place too: moved to another revision, it fails to open. */
type SegmentField = `history:${number}`;
const segmentField = (revision: number): SegmentField => `history:${revision}`;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface SealedContent {
  readonly sealedStatusMessage?: SealedBlob;
  readonly sealedArtifacts?: SealedBlob;
  readonly sealedHistory?: SealedBlob;
}

export class TaskContentCodec {
  constructor(private readonly sealer: Sealer) {}

  async seal(
    taskId: string,
    content: { statusMessage?: Message; artifacts?: readonly Artifact[]; history?: readonly HistoryEntry[] },
  ): Promise<SealedContent> {
    const [sealedStatusMessage, sealedArtifacts, sealedHistory] = await Promise.all([
      this.sealField(taskId, 'statusMessage', content.statusMessage),
      this.sealField(taskId, 'artifacts', content.artifacts),
      this.sealField(taskId, 'history', content.history),
    ]);
    return { sealedStatusMessage, sealedArtifacts, sealedHistory };
  }

  /**
   * A suspended run's state (docs/operations.md, "Approvals"), bound to its task and run: it opens nowhere
   * else.
   */
  async sealSuspension(taskId: string, runId: string, state: SuspendedRun): Promise<SealedBlob> {
    return (await this.sealField(taskId, suspensionField(runId), state)) as SealedBlob;
  }

  async openSuspension(taskId: string, runId: string, blob: SealedBlob): Promise<SuspendedRun> {
    return (await this.openField<SuspendedRun>(taskId, suspensionField(runId), blob)) as SuspendedRun;
  }

  private async sealField(
    taskId: string,
    field: ContentField | SuspensionField | SegmentField,
    value: unknown,
  ): Promise<SealedBlob | undefined> {
    if (value === undefined) return undefined;
    try {
      return await this.sealer.seal(encoder.encode(JSON.stringify(value)), { taskId, field });
    } catch (error) {
      throw error instanceof SealingFailedError
        ? error
        : new SealingFailedError('Sealing failed', { field }, { cause: error });
    }
  }

  openStatusMessage(taskId: string, blob: SealedBlob | undefined): Promise<Message | undefined> {
    return this.openField<Message>(taskId, 'statusMessage', blob);
  }

  async openArtifacts(taskId: string, blob: SealedBlob | undefined): Promise<Artifact[]> {
    return (await this.openField<Artifact[]>(taskId, 'artifacts', blob)) ?? [];
  }

  /** The entries of one revision as a history segment (docs/data-model.md, "History"). */
  async sealHistorySegment(
    taskId: string,
    revision: number,
    entries: readonly HistoryEntry[],
  ): Promise<SealedBlob> {
    return (await this.sealField(taskId, segmentField(revision), entries)) as SealedBlob;
  }

  async openHistorySegment(taskId: string, revision: number, blob: SealedBlob): Promise<HistoryEntry[]> {
    return (await this.openField<HistoryEntry[]>(taskId, segmentField(revision), blob)) ?? [];
  }

  async openHistory(taskId: string, blob: SealedBlob | undefined): Promise<HistoryEntry[]> {
    return (await this.openField<HistoryEntry[]>(taskId, 'history', blob)) ?? [];
  }

  private async openField<T>(
    taskId: string,
    field: ContentField | SuspensionField | SegmentField,
    blob: SealedBlob | undefined,
  ): Promise<T | undefined> {
    if (blob === undefined) return undefined;
    const plaintext = await this.sealer.open(blob, { taskId, field });
    return JSON.parse(decoder.decode(plaintext)) as T;
  }
}
