// Leitmotif's public surface: every layer re-exported, so a game needs only `import Leitmotif`.
// The layers, lowest first (Package.swift says what each depends on):
//   LeitmotifDecoding, LeitmotifOutput   decoders and tags; OpenAL devices, sources, WAV
//   LeitmotifEngine                      the mixer, voices and their handles, the mix clock
//   LeitmotifAnalysis                    loudness, tempo, beats and energy of a whole song
//   LeitmotifLibrary                     the player's music library: index, queries, consent, picker
//   LeitmotifPlayers                     Player, QueuePlayer, transitions, offline rendering
//   LeitmotifCues                        cue files, the level-event bus, the music director
//   LeitmotifDesktop                     the desktop's session bus: MPRIS ("now playing", media keys)
@_exported import LeitmotifAnalysis
@_exported import LeitmotifCues
@_exported import LeitmotifDecoding
@_exported import LeitmotifDesktop
@_exported import LeitmotifEngine
@_exported import LeitmotifLibrary
@_exported import LeitmotifOutput
@_exported import LeitmotifPlayers
