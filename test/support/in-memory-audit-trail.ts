import {
  type AuditEntry,
  type AuditRowSummary,
  type AuditTrail,
  auditContentAt,
} from '../../shared/domain/audit.ts';
import { isAtLeast, type PrivacyLevel } from '../../shared/domain/privacy.ts';

/** The audit port in memory: keeps the entries exactly as the use case handed them over. */
export class InMemoryAuditTrail implements AuditTrail {
  entries: AuditEntry[] = [];
  /** Makes `record` reject for the entries it matches (a failure DynamoDB Local cannot be made to produce on demand). */
  failWhen: ((entry: AuditEntry) => boolean) | undefined;

  async record(entry: AuditEntry): Promise<void> {
    if (this.failWhen?.(entry)) throw new Error('audit table unavailable');
    this.entries.push(entry);
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
      if (ceiling === 'metadata' || content === undefined) return [{ ...metadata, level: ceiling }];
      return [{ ...metadata, level: 'redacted', content: auditContentAt('redacted', content) }];
    });
  }
}
