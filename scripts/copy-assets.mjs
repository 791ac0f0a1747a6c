// After `tsc`: copies the dashboard's static files (HTML, JS, CSS) next to the compiled module.
import { cpSync } from 'node:fs';

cpSync('src/dashboard/assets', 'dist/dashboard/assets', { recursive: true });
