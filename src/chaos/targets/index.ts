/** The provider targets of `syncrelay chaos --provider X`, by provider. */
import { startGithubTarget } from './github.js';
import { startJiraTarget } from './jira.js';
import { startLinearTarget } from './linear.js';
import type { ChaosProvider, ChaosTarget, TargetOptions } from './target.js';

export { CHAOS_PROVIDERS, type ChaosProvider, type ChaosTarget, type GroundTruth } from './target.js';

const STARTERS: Record<ChaosProvider, (o: TargetOptions) => Promise<ChaosTarget>> = {
  github: startGithubTarget,
  linear: startLinearTarget,
  jira: startJiraTarget,
};

/** Starts `provider`'s emulator on 127.0.0.1, quiet until the fault phase turns it hostile. */
export function startTarget(provider: ChaosProvider, o: TargetOptions): Promise<ChaosTarget> {
  return STARTERS[provider](o);
}
