// The benchmark's SDL_mixer peer (zlib-licensed SDL_mixer 2.6, libsdl2-mixer-dev), which mixes
// in its own code like Leitmotif: with SDL_AUDIODRIVER=dummy it skips the OS output, as
// Leitmotif's headless device does. SDL_mixer 2 streams one Mix_Music at a time only, so voice 1
// is a looping Mix_Music and voices 2 to N are looping Mix_Chunks, which it decodes whole when
// they load (before the window): it pays nothing for their decoding while measured. Built and
// run by `leitmotif-bench voices` when SDL_mixer is installed; never part of the package.
//
//   sdl-mixer N SECONDS WARMUP FILE...   (N = 0: an idle mixer, nothing playing)
//
// Prints "CPU_SECONDS WALL_SECONDS" like sfml-music.
#include <SDL2/SDL.h>
#include <SDL2/SDL_mixer.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpuSeconds(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static double wallSeconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: sdl-mixer N SECONDS WARMUP FILE...\n");
    return 2;
  }
  int count = atoi(argv[1]);
  double seconds = atof(argv[2]);
  double warmUp = atof(argv[3]);
  int fileCount = argc - 4;
  if (SDL_Init(SDL_INIT_AUDIO) != 0) return 1;
  Mix_Init(MIX_INIT_OGG);
  // The mix rate and period Leitmotif uses: 48 kHz float stereo, 1024 frames.
  if (Mix_OpenAudio(48000, AUDIO_F32SYS, 2, 1024) != 0) return 1;
  Mix_AllocateChannels(16);
  Mix_Music* music = NULL;
  Mix_Chunk* chunks[16] = {0};
  for (int index = 0; index < count && index < 17; index++) {
    if (fileCount == 0) return 2;
    const char* path = argv[4 + index % fileCount];
    if (index == 0) {
      music = Mix_LoadMUS(path);
      if (!music || Mix_PlayMusic(music, -1) != 0) return 1;
    } else {
      chunks[index - 1] = Mix_LoadWAV(path);
      if (!chunks[index - 1] || Mix_PlayChannel(-1, chunks[index - 1], -1) < 0) return 1;
    }
  }
  usleep((useconds_t)(warmUp * 1e6));
  double cpu = cpuSeconds();
  double wall = wallSeconds();
  usleep((useconds_t)(seconds * 1e6));
  printf("%.6f %.6f\n", cpuSeconds() - cpu, wallSeconds() - wall);
  fflush(stdout);
  Mix_HaltMusic();
  Mix_HaltChannel(-1);
  if (music) Mix_FreeMusic(music);
  for (int index = 0; index < 16; index++)
    if (chunks[index]) Mix_FreeChunk(chunks[index]);
  Mix_CloseAudio();
  Mix_Quit();
  SDL_Quit();
  return 0;
}
