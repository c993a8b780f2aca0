import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds used so far by this process and by its descendants (DynamoDB Local's JVM), from /proc
 * where there is one (elsewhere the descendants count 0). The local stack's handlers, pollers,
 * SQS and KMS emulators and the benchmark's own clients all run in this process.
 */
export const cpuSeconds = (): { node: number; children: number } => {
  const usage = process.cpuUsage();
  let children = 0;
  try {
    const tick = 100; // USER_HZ
    const stats = new Map<number, { ppid: number; cpu: number }>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
        stats.set(Number(entry), {
          ppid: Number(fields[1]),
          cpu: (Number(fields[11]) + Number(fields[12])) / tick,
        });
      } catch {
        // the process ended meanwhile
      }
    }
    const descends = (pid: number): boolean => {
      for (let at = stats.get(pid)?.ppid; at !== undefined && at > 1; at = stats.get(at)?.ppid) {
        if (at === process.pid) return true;
      }
      return false;
    };
    for (const [pid, stat] of stats) if (descends(pid)) children += stat.cpu;
  } catch {
    // not Linux: children stay 0
  }
  return { node: (usage.user + usage.system) / 1e6, children };
};
