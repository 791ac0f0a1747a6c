// After `tsc`: copies the dashboard's static files (HTML, JS, CSS) and each provider's SQL
// migrations next to the compiled modules.
import { cpSync, existsSync, readdirSync } from 'node:fs';

cpSync('src/dashboard/assets', 'dist/dashboard/assets', { recursive: true });
for (const provider of readdirSync('src/providers', { withFileTypes: true })) {
  const dir = `src/providers/${provider.name}/migrations`;
  if (provider.isDirectory() && existsSync(dir))
    cpSync(dir, `dist/providers/${provider.name}/migrations`, { recursive: true });
}
