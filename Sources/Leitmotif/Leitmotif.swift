// Leitmotif's public surface: the engine, the player, and the layers below re-exported so a game
// needs only `import Leitmotif`.
@_exported import LeitmotifDecoding
@_exported import LeitmotifOutput
