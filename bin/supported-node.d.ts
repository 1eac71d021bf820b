export declare const MIN_NODE: string;
export declare function nodeSupported(version: string): boolean;
