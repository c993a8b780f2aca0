import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of local processes from Linux's /proc (decision 0035). */

const ticksPerSecond = 100; // USER_HZ on Linux

/** User + system CPU milliseconds of a process (all its threads), from /proc/<pid>/stat. */
export const cpuMsOf = (pid: number | 'self'): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / ticksPerSecond;
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
