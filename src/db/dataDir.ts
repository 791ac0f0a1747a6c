/**
 * The embedded mode's data directory (SYNCRELAY_DATA_DIR): the PGlite database and the generated
 * key file live there, so it is the owner's only, mode 0700, whatever the umask. A new directory is
 * made 0700 (mkdir's mode is masked by the umask, so it is set again after). An existing one that
 * other users may enter is tightened to 0700 when it is safe to: the directory belongs to this
 * user, is not a shared sticky directory (/tmp) and is syncrelay's own (empty, or holding the
 * database or the key file). Otherwise starting is refused, naming the directory.
 */
import { chmodSync, mkdirSync, readdirSync, statSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import { ValidationError } from '../errors.js';

export const DATA_DIR_SETTING = 'SYNCRELAY_DATA_DIR';
export const DATA_DIR_MODE = 0o700;
/** What syncrelay keeps in its data directory: PGlite's marker file, the key file, the lock. */
const OWN_ENTRIES = ['PG_VERSION', 'secret.key', 'syncrelay.lock'];

export type DataDirState = 'created' | 'tightened' | 'private';

/** Makes `dir` (and missing parents) 0700, or checks and tightens an existing one; see the module comment. */
export function ensurePrivateDataDir(dir: string): DataDirState {
  const path = resolve(dir);
  if (process.platform === 'win32') {
    mkdirSync(path, { recursive: true });
    return 'private';
  }
  if (mkdirSync(path, { recursive: true, mode: DATA_DIR_MODE }) !== undefined) {
    chmodSync(path, DATA_DIR_MODE);
    return 'created';
  }
  const st = statSync(path);
  if (!st.isDirectory()) throw new ValidationError(DATA_DIR_SETTING, `${path} is not a directory`);
  if ((st.mode & 0o077) === 0) return 'private';
  const why = whyNotTighten(path, st);
  if (why) {
    throw new ValidationError(
      DATA_DIR_SETTING,
      `${path} is open to other users (mode ${modeText(st.mode)}) and ${why}: ` +
        `run \`chmod 700 ${path}\`, or set ${DATA_DIR_SETTING} to a directory of syncrelay's own`,
    );
  }
  chmodSync(path, DATA_DIR_MODE);
  return 'tightened';
}

/** Why an open directory is not tightened here, or null when it may be. */
function whyNotTighten(path: string, st: Stats): string | null {
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) return 'belongs to another user';
  if ((st.mode & 0o1000) !== 0) return 'is a shared (sticky) directory';
  const entries = readdirSync(path);
  if (entries.length > 0 && !entries.some((e) => OWN_ENTRIES.includes(e))) {
    return 'holds files that are not syncrelay’s';
  }
  return null;
}

export function modeText(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0');
}
