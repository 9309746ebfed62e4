import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The repository root (libs/config/src → ../../..). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** All local state lives under BOOKTAPE_DATA_DIR (default ./data at the repository root). */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  const d = env.BOOKTAPE_DATA_DIR;
  return d ? path.resolve(d) : path.join(REPO_ROOT, 'data');
}
