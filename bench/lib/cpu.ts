import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of the local stack's processes, from Linux's /proc (decisions 0033, 0035). */

const ticksPerSecond = 100; // USER_HZ on Linux

/** Parent pid and user + system CPU milliseconds (all threads) of a process, from /proc/<pid>/stat. */
const statOf = (pid: number | string): { ppid: number; cpuMs: number } => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces and parentheses) start at field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(fields[1]),
    cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond,
  };
};

/** User + system CPU milliseconds of a process (all its threads). */
export const cpuMsOf = (pid: number | 'self'): number => statOf(pid).cpuMs;

/**
 * CPU seconds used so far by this process and by its descendants (DynamoDB Local's JVM), from /proc
 * where there is one (elsewhere the descendants count 0). The local stack's handlers, pollers,
 * SQS and KMS emulators and the benchmark's own in-process clients run in this process. The
 * processes `exclude` names (the load generator, the SDK server) and theirs are not counted.
 */
export const cpuSeconds = (
  exclude: readonly number[] = [],
): { node: number; children: number; mainThread: number } => {
  const usage = process.cpuUsage();
  let children = 0;
  try {
    const stats = new Map<number, { ppid: number; cpuMs: number }>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        stats.set(Number(entry), statOf(Number(entry)));
      } catch {
        // the process ended meanwhile
      }
    }
    const descends = (pid: number): boolean => {
      if (exclude.includes(pid)) return false;
      for (let at = stats.get(pid)?.ppid; at !== undefined && at > 1; at = stats.get(at)?.ppid) {
        if (at === process.pid) return true;
        if (exclude.includes(at)) return false;
      }
      return false;
    };
    for (const [pid, stat] of stats) if (descends(pid)) children += stat.cpuMs / 1000;
  } catch {
    // not Linux: children stay 0
  }
  return { node: (usage.user + usage.system) / 1e6, children, mainThread: mainThreadSeconds() };
};

/**
 * CPU seconds of this process's main thread alone (/proc/self/task/<pid>/stat; 0 elsewhere): the
 * thread every handler, poller and emulator of the local stack runs its JavaScript on, so at most
 * one core's worth however many cores the machine has (GC helpers and libuv's pool are the rest).
 */
export const mainThreadSeconds = (): number => {
  try {
    return statOf(`self/task/${process.pid}`).cpuMs / 1000;
  } catch {
    return 0;
  }
};

/** DynamoDB Local's Java process: the one whose command line holds the jar and `port`. */
export const dynamoDbLocalPid = (port: number): number => {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string[];
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const portAt = cmdline.indexOf('-port');
    if (
      cmdline[0]?.endsWith('java') &&
      cmdline.some((arg) => arg.endsWith('DynamoDBLocal.jar')) &&
      cmdline[portAt + 1] === String(port)
    ) {
      return Number(entry);
    }
  }
  throw new Error(`no DynamoDB Local java process on port ${port}`);
};
