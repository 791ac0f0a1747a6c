/** The shared core every emulator is built on (see the modules for each part). */
export * from './credentials.js';
export * from './faultDeck.js';
export * from './faultSpec.js';
export * from './http.js';
export * from './names.js';
export * from './options.js';
export * from './random.js';
export * from './scale.js';
export * from './serve.js';
export * from './window.js';
