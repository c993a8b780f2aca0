/** A plain-text table for the command-line tools: left-aligned columns, the last one not padded. */
export const table = (header: readonly string[], rows: readonly (readonly string[])[]): string[] => {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ');
  return [line(header), ...rows.map(line)];
};
