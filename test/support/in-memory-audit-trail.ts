import {
  type AuditEntry,
  type AuditRowSummary,
  type AuditTrail,
  auditContentAt,
  type RunStarts,
  type StartOutcome,
  type StartSlot,
} from '../../shared/domain/audit.ts';
import { isAtLeast, type PrivacyLevel } from '../../shared/domain/privacy.ts';

const slotKey = (slot: StartSlot): string => `${slot.taskId}#${slot.runId}#${slot.version}`;

/** The audit port in memory: keeps the entries exactly as the use case handed them over. */
export class InMemoryAuditTrail implements AuditTrail, RunStarts {
  entries: AuditEntry[] = [];
  /** Makes `record` reject for the entries it matches (a failure DynamoDB Local cannot be made to produce on demand). */
  failWhen: ((entry: AuditEntry) => boolean) | undefined;
  /** The start slot each start marker or reaper entry holds (decision 0072). */
  private readonly slots = new Map<AuditEntry, string>();

  async record(entry: AuditEntry): Promise<void> {
    if (this.failWhen?.(entry)) throw new Error('audit table unavailable');
    this.entries.push(entry);
  }

  async recordStart(entry: AuditEntry, version: number): Promise<StartOutcome> {
    if (this.failWhen?.(entry)) throw new Error('audit table unavailable');
    const held = this.holderOf({ ...entry, version });
    if (held !== undefined) return held.kind === 'claim' ? 'recorded' : 'taken';
    this.hold(entry, version);
    return 'recorded';
  }

  async anyStarted(taskId: string, runId: string): Promise<boolean> {
    return this.entries.some(
      (entry) =>
        this.slots.has(entry) && entry.kind === 'claim' && entry.taskId === taskId && entry.runId === runId,
    );
  }

  async take(entry: AuditEntry, version: number): Promise<boolean> {
    const held = this.holderOf({ ...entry, version });
    if (held !== undefined) return held.kind === 'requeue';
    this.hold(entry, version);
    return true;
  }

  async release(slot: StartSlot): Promise<void> {
    const held = this.holderOf(slot);
    if (held?.kind === 'requeue') this.entries = this.entries.filter((entry) => entry !== held);
  }

  async listForTask(taskId: string): Promise<AuditRowSummary[]> {
    return this.entries
      .filter((entry) => entry.taskId === taskId)
      .map(({ content, ...row }) => ({ ...row, hasContent: content !== undefined }));
  }

  async scrubRun(taskId: string, runId: string, ceiling: PrivacyLevel): Promise<void> {
    const ofRun = (entry: AuditEntry) => entry.taskId === taskId && entry.runId === runId;
    this.entries = this.entries.flatMap((entry): AuditEntry[] => {
      if (!ofRun(entry) || isAtLeast(ceiling, entry.level)) return [entry];
      if (ceiling === 'none') return [];
      const { content, ...metadata } = entry;
      const cut: AuditEntry =
        ceiling === 'metadata' || content === undefined
          ? { ...metadata, level: ceiling }
          : { ...metadata, level: 'redacted', content: auditContentAt('redacted', content) };
      const slot = this.slots.get(entry);
      if (slot !== undefined) this.slots.set(cut, slot);
      return [cut];
    });
  }

  private hold(entry: AuditEntry, version: number): void {
    this.entries.push(entry);
    this.slots.set(entry, slotKey({ ...entry, version }));
  }

  private holderOf(slot: StartSlot): AuditEntry | undefined {
    const key = slotKey(slot);
    return this.entries.find((entry) => this.slots.get(entry) === key);
  }
}
