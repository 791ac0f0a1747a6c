/** What the runner hands every scenario, and what a scenario reports. */

export interface BenchOptions {
  /** Small sizes for the CI smoke run: every scenario completes and prints its line, fast. */
  quick: boolean;
  /** Repetitions of each measurement (baseline and syncrelay alternate). */
  reps: number;
  /** Progress notes (stderr). */
  note(message: string): void;
}

/** One JSON line: medians, the ratio to the baseline measured in the same run, and the target. */
export interface ScenarioResult {
  scenario: string;
  /** syncrelay ÷ baseline (or the figure ÷ its bound), as the scenario defines it. */
  ratio: number;
  /** Human-readable target, e.g. ">= 0.6". */
  target: string;
  met: boolean;
  [figure: string]: unknown;
}

export interface Scenario {
  name: string;
  /** One line per scenario; scenario 2 also reports scenario 6 (memory is measured during it). */
  run(opts: BenchOptions): Promise<ScenarioResult[]>;
}
