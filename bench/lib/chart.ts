/**
 * An SVG bar chart of each scenario's ratio with its target marked (green met, red not met); a
 * result's `chart_note` (e2e: the two best shapes) is printed small under its name.
 */
import type { ScenarioResult } from './types.js';

interface Report {
  started_at: string;
  machine: { cpus: number; cpu_model: string };
  quick: boolean;
  results: ScenarioResult[];
}

const ROW = 34;
const LEFT = 250;
const BAR_MAX = 420;
const TEXT_X = LEFT + BAR_MAX + 30;
const WIDTH = 1180;

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The number in a target like ">= 0.6" or "<= 1.5". */
function targetValue(target: string): number {
  const m = /([0-9.]+)/.exec(target);
  return m ? Number(m[1]) : Number.NaN;
}

export function renderChart(report: Report): string {
  const rows = report.results.filter((r) => Number.isFinite(r.ratio));
  const scaleMax = Math.max(
    2,
    ...rows.map((r) => Math.min(r.ratio, 10)),
    ...rows.map((r) => targetValue(r.target)).filter(Number.isFinite),
  );
  const x = (v: number) => LEFT + (Math.min(v, scaleMax) / scaleMax) * BAR_MAX;
  const height = 70 + rows.length * ROW + 40;
  const quick = report.quick ? ' · QUICK (smoke sizes)' : '';
  const subtitle = `${report.started_at} · ${report.machine.cpus} × ${report.machine.cpu_model}${quick}`;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" ` +
      `font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="16" y="24" font-size="16" font-weight="bold">` +
      `syncrelay bench: ratio to the baseline of the same run</text>`,
    `<text x="16" y="44" fill="#555">${escape(subtitle)}</text>`,
  ];
  rows.forEach((r, i) => {
    const y = 64 + i * ROW;
    const colour = r.met ? '#2e7d32' : '#c62828';
    const t = targetValue(r.target);
    parts.push(
      `<text x="16" y="${y + 15}">${escape(r.scenario)}</text>`,
      typeof r.chart_note === 'string'
        ? `<text x="16" y="${y + 28}" font-size="10" fill="#555">${escape(r.chart_note)}</text>`
        : '',
      `<rect x="${LEFT}" y="${y + 4}" width="${Math.max(1, x(r.ratio) - LEFT)}" height="18" ` +
        `fill="${colour}" opacity="0.85"/>`,
      `<text x="${TEXT_X}" y="${y + 17}"><tspan font-weight="bold" fill="${colour}">` +
        `${r.ratio}${r.ratio > scaleMax ? ' (off scale)' : ''} ${r.met ? 'met' : 'not met'}</tspan>` +
        ` · target ${escape(r.target)}</text>`,
    );
    if (Number.isFinite(t))
      parts.push(
        `<line x1="${x(t)}" x2="${x(t)}" y1="${y}" y2="${y + 26}" ` +
          `stroke="black" stroke-width="2" stroke-dasharray="3,2"/>`,
      );
  });
  const axisY = 64 + rows.length * ROW + 8;
  parts.push(`<line x1="${LEFT}" x2="${LEFT + BAR_MAX}" y1="${axisY}" y2="${axisY}" stroke="#999"/>`);
  for (let v = 0; v <= scaleMax + 1e-9; v += scaleMax > 4 ? 1 : 0.5) {
    parts.push(`<text x="${x(v)}" y="${axisY + 16}" text-anchor="middle" fill="#555">${v}</text>`);
  }
  parts.push(`<text x="16" y="${axisY + 16}" fill="#555">dashed: target</text>`, '</svg>');
  return `${parts.join('\n')}\n`;
}
