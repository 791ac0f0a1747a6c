// dependency-cruiser: the import rules of src/ (docs/architecture.md, "Dependency rules").
// `npm run lint:deps` checks them; every rule is an error. Type-only imports count: a circle of
// types is still a circle.

/** One forbidden kind of import: from modules matching `from` to modules matching `to`. */
function forbid(name, comment, from, to) {
  return { name, comment, severity: 'error', from, to };
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    forbid(
      'no-circular',
      'No import circle anywhere in src/, type-only imports included: move the shared piece below both.',
      { path: '^src/' },
      { circular: true },
    ),
    forbid(
      'domain-imports-nothing',
      'src/domain/ is pure rules: it imports nothing outside itself (no module, no package).',
      { path: '^src/domain/' },
      { pathNot: '^src/domain/' },
    ),
    forbid(
      'store-on-db-and-domain',
      "src/store/ builds on src/db/ and src/domain/ only (and the normalized store's vocabulary).",
      { path: '^src/store/' },
      { path: '^src/', pathNot: '^src/(store|db|domain)/|^src/sdk/normalized[.]ts$' },
    ),
    forbid(
      'sdk-below-plugins',
      'The plug-in SDK sits below providers and sinks: it imports none of them, nor the surfaces above.',
      { path: '^src/sdk/' },
      { path: '^src/(providers|sinks|api|cli|emulators|dashboard)/' },
    ),
    forbid(
      'sinks-not-to-providers',
      'Sinks know no provider: provider knowledge reaches a sink as hooks registered with it.',
      { path: '^src/sinks/' },
      { path: '^src/providers/' },
    ),
    forbid(
      'provider-not-to-sinks',
      'A provider folder (not the kit) imports no sink; it may configure the generic fenced Postgres sink ' +
        'for tables of its own (src/sinks/postgres.ts).',
      { path: '^src/providers/[^/]+/', pathNot: '^src/providers/kit/' },
      { path: '^src/sinks/', pathNot: '^src/sinks/postgres[.]ts$' },
    ),
    forbid(
      'provider-folders-apart',
      'A provider folder imports no other provider folder, only itself and the kit (the kit none).',
      { path: '^src/providers/([^/]+)/' },
      { path: '^src/providers/[^/]+/', pathNot: '^src/providers/($1|kit)/' },
    ),
    forbid(
      'providers-not-to-emulators',
      'Providers never import the emulators they are tested against.',
      { path: '^src/providers/' },
      { path: '^src/emulators/' },
    ),
    forbid(
      'emulators-not-to-providers',
      'An emulator imitates the service from its published behaviour, never from our provider code: ' +
        'a piece both used would hide a mistake both made.',
      { path: '^src/emulators/' },
      { path: '^src/providers/' },
    ),
    forbid(
      'emulators-from-cli-only',
      "The emulators are reached from `syncrelay emulate` and `demo`, and from the chaos run's provider targets only.",
      { path: '^src/', pathNot: '^src/(cli|emulators|providers|chaos/targets)/' },
      { path: '^src/emulators/' },
    ),
    forbid(
      'emulator-folders-apart',
      'An emulator folder imports no other emulator folder, only itself and the shared core.',
      { path: '^src/emulators/([^/]+)/' },
      { path: '^src/emulators/[^/]+/', pathNot: '^src/emulators/($1|core)/' },
    ),
    forbid(
      'graphql-in-emulators-only',
      'The graphql package serves the emulators; the engine and the providers do not use it.',
      { path: '^src/', pathNot: '^src/emulators/' },
      { path: '(^|/)node_modules/graphql/' },
    ),
    forbid(
      'reconciler-not-to-tasks',
      'The reconciler repairs through the store and the broker; it takes nothing from src/tasks/.',
      { path: '^src/reconciler/' },
      { path: '^src/tasks/' },
    ),
    forbid(
      'nothing-imports-cli',
      'src/cli/ is the top of the graph: one file per subcommand, and nothing outside it imports it.',
      { path: '^src/', pathNot: '^src/cli/' },
      { path: '^src/cli/' },
    ),
    forbid(
      'api-from-surfaces-only',
      'src/api/ is imported only by the surfaces above it (cli, dashboard) and the public index.',
      { path: '^src/', pathNot: '^src/(api|cli|dashboard)/|^src/index[.]ts$' },
      { path: '^src/api/' },
    ),
  ],
  options: {
    // Type-only imports are dependencies too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: '(^|/)node_modules/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
