import type { AuditEntry, AuditRowSummary, AuditTrail } from '../../shared/domain/audit.ts';

/** The audit port in memory: keeps the entries exactly as the use case handed them over. */
export class InMemoryAuditTrail implements AuditTrail {
  readonly entries: AuditEntry[] = [];
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
}
