// Types of scripts/layers.mjs (the layers of src/), for the tests that read it.
export declare const LEAVES: string[];
export declare const LAYERS: Record<string, { may: string[]; noPackages: string[] }>;
export declare const RUNNER_LEASE_FILES: string[];
export declare const ADAPTER_PACKAGES: string[];
