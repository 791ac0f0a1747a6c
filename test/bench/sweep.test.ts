/** The e2e sweep's bookkeeping: shapes, the pool cap, finalists, best shapes and the table. */
import { describe, expect, it } from 'vitest';
import {
  bestShape,
  finalists,
  poolCapFor,
  shapeName,
  sweepShapes,
  sweepTable,
  type ShapeRounds,
} from '../../bench/lib/sweep.js';

const rounds = (...rates: number[]) => rates.map((rate) => ({ rate, cpu: { total: 1 } }));

function shapeRounds(processes: number, concurrency: number, syncrelay: number[], peer: number[]): ShapeRounds {
  return {
    shape: { processes, concurrency, pool: Math.min(concurrency, 16) },
    pre: { syncrelay: rounds(...syncrelay), peer: rounds(...peer) },
    final: { syncrelay: [], peer: [] },
  };
}

describe('bench sweep', () => {
  it('sweeps {1,2} × {16,32,64,128} (quick: × {16,64}) with pool = min(concurrency, cap)', () => {
    expect(sweepShapes(false, 16).map(shapeName)).toEqual([
      '1x16/pool16',
      '1x32/pool16',
      '1x64/pool16',
      '1x128/pool16',
      '2x16/pool16',
      '2x32/pool16',
      '2x64/pool16',
      '2x128/pool16',
    ]);
    expect(sweepShapes(true, 12).map(shapeName)).toEqual(['1x16/pool12', '1x64/pool12', '2x16/pool12', '2x64/pool12']);
  });

  it('caps the pool so both systems of the widest shape fit in max_connections, and refuses a tiny pool', () => {
    const budget = { maxConnections: 100, reserved: 3, inUse: 5, benchPool: 16, maxProcesses: 2 };
    expect(poolCapFor(budget)).toBe(16);
    expect(poolCapFor({ ...budget, inUse: 30 })).toBe(10); // (100 − 3 − 30 − 16) ÷ 4 − 2
    expect(() => poolCapFor({ ...budget, inUse: 60 })).toThrow(/max_connections 100/);
  });

  it('finals are the union of each system’s top shapes; best vs best picks each system’s best final', () => {
    const all = [
      shapeRounds(1, 16, [900, 1000], [2000, 2100]),
      shapeRounds(1, 64, [1200, 1300], [2400, 2300]),
      shapeRounds(2, 16, [1500, 1400], [1600, 1500]),
      shapeRounds(2, 64, [1000, 1100], [1700, 1800]),
    ];
    const f = finalists(all, 1);
    expect(f.map((r) => shapeName(r.shape))).toEqual(['1x64/pool16', '2x16/pool16']);
    f[0]!.final = { syncrelay: rounds(1250, 1260, 1270), peer: rounds(2200, 2300, 2250) };
    f[1]!.final = { syncrelay: rounds(1550, 1500, 1600), peer: rounds(1600, 1650, 1700) };
    expect(shapeName(bestShape(all, 'syncrelay').shape)).toBe('2x16/pool16');
    expect(shapeName(bestShape(all, 'peer').shape)).toBe('1x64/pool16');
    const table = sweepTable(all);
    expect(table.map((t) => [t.shape, t.stage, t.rounds, t.ratio])).toEqual([
      ['1x16/pool16', 'pre-sweep', 2, 0.463], // 950 ÷ 2,050,
      ['1x64/pool16', 'final', 3, 0.56], // 1,260 ÷ 2,250,
      ['2x16/pool16', 'final', 3, 0.939],
      ['2x64/pool16', 'pre-sweep', 2, 0.6],
    ]);
  });

  it('has no best shape before a final round', () => {
    expect(() => bestShape([shapeRounds(1, 16, [1], [1])], 'peer')).toThrow(/no final rounds for peer/);
  });
});
