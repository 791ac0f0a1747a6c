/**
 * A provider's dataset table: one line per dataset naming its key, the surfaces it writes and the
 * function that runs its unit (or null, when its data arrives with another dataset's calls). The
 * table gives the engine the `DatasetSpec`s and the runner (runner.ts) each dataset's function.
 *
 * Reference datasets (the whole of a source: repositories, members, sprints) read everything in
 * one window and keep no watermark; work-item datasets read a window and keep a watermark when they
 * call anything.
 */
import type { DatasetSpec, UnitResult } from '../../sdk/types.js';

/** A reference dataset's window: a century, i.e. one window for everything. */
export const LONG_WINDOW_DAYS = 36_500;

/** Runs one job of a dataset's unit (a source's reads and writes). */
export type DatasetRunner<J> = (job: J) => Promise<UnitResult>;

/** One line of a provider's dataset table. */
export interface DatasetDef<J> {
  spec: DatasetSpec;
  /** null: the dataset's data arrives with another dataset's calls (nothing to call). */
  run: DatasetRunner<J> | null;
  /** With nothing to call: the dataset whose unit writes this one's data. @default spec.fetchedWith */
  coveredBy?: string;
  /** Runs a verify unit of the dataset (`spec.verifies`); none: the dataset is not verified. */
  verify?: DatasetRunner<J>;
}

export interface DatasetOptions<J = unknown> {
  /** Planned with this dataset's unit, which fetches this one's data in the same calls. */
  fetchedWith?: string;
  /** With nothing to call: the dataset whose unit writes this one's data. @default fetchedWith */
  coveredBy?: string;
  /**
   * A verify run lists this dataset's ids (`DatasetSpec.verifies`): the function of its verify unit,
   * or `true` for a dataset fetched with one that has it (its unit carries this one).
   */
  verify?: DatasetRunner<J> | true;
}

/** The line builders of a provider's table; every dataset of it has the cost class `costClass`. */
export function datasetTable<J>(costClass: string) {
  function def(spec: DatasetSpec, run: DatasetRunner<J> | null, o: DatasetOptions<J>): DatasetDef<J> {
    const withFetch = o.fetchedWith ? { ...spec, fetchedWith: o.fetchedWith } : spec;
    const full = o.verify ? { ...withFetch, verifies: true } : withFetch;
    const verify = typeof o.verify === 'function' ? { verify: o.verify } : {};
    return { spec: full, run, ...(o.coveredBy ? { coveredBy: o.coveredBy } : {}), ...verify };
  }
  return {
    /** A work-item dataset: read by window, from a watermark when it calls anything. */
    work: (key: string, surfaces: string[], run: DatasetRunner<J> | null, o: DatasetOptions<J> = {}): DatasetDef<J> => {
      return def({ key, tier: 'work_item', costClass, keepsWatermark: run !== null, surfaces }, run, o);
    },
    /** A reference dataset: the whole of each source in one window, no watermark. */
    reference: (
      key: string,
      surfaces: string[],
      run: DatasetRunner<J> | null,
      o: DatasetOptions<J> = {},
    ): DatasetDef<J> => {
      const spec: DatasetSpec = {
        key,
        tier: 'reference',
        costClass,
        keepsWatermark: false,
        windowDays: LONG_WINDOW_DAYS,
        surfaces,
      };
      return def(spec, run, o);
    },
  };
}

/** The engine's view of a table: its specs, in order. */
export function specsOf<J>(defs: readonly DatasetDef<J>[]): DatasetSpec[] {
  return defs.map((d) => d.spec);
}
