/**
 * The bench's worker processes run as plain `node` on JavaScript, as a deployed worker would: a
 * TypeScript loader in the process would add its own memory (about 35 MB) to the RSS figure.
 * `src/` and `bench/lib/` are transpiled file by file (imports already name `.js` files) into
 * node_modules/.cache/syncrelay-bench/<pid>/, where bare imports still resolve to the project's
 * packages; removed when the run ends, and leftovers of dead runs at the next start.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache', 'syncrelay-bench');
/** This run's own copy (two bench runs at once never read each other's half-written files). */
const BUILD_DIR = join(CACHE, String(process.pid));

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

let built: string | undefined;

/** Transpiles once per bench run; returns the path of the child entry (child.js). */
export function buildChildEntry(): string {
  if (built) return built;
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.ESNext,
    target: ts.ScriptTarget.ES2022,
    sourceMap: false,
  };
  for (const file of [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'bench', 'lib'))]) {
    const out = join(BUILD_DIR, relative(ROOT, file)).replace(/\.ts$/, '.js');
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file });
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
  writeFileSync(join(BUILD_DIR, 'package.json'), '{ "type": "module" }\n');
  built = join(BUILD_DIR, 'bench', 'lib', 'child.js');
  return built;
}

/** Removes this run's copy, and copies whose run is gone. */
export function removeBuilds(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(CACHE);
  } catch {
    return;
  }
  for (const name of entries) {
    const pid = Number(name);
    if (pid === process.pid || !alive(pid)) rmSync(join(CACHE, name), { recursive: true, force: true });
  }
  built = undefined;
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
