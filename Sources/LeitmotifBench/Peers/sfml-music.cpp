// The benchmark's SFML peer (zlib-licensed SFML 2.5, libsfml-dev): N sf::Music voices streamed
// through OpenAL Soft, each looping one of the files, for comparison with Leitmotif's mixer on the
// same OpenAL device. Built and run by `leitmotif-bench voices` when SFML is installed; never
// part of the package.
//
//   sfml-music N SECONDS WARMUP FILE...   (N = 0: an idle OpenAL device and context, nothing else)
//
// Prints "CPU_SECONDS WALL_SECONDS": getrusage(RUSAGE_SELF) user + kernel over the window, after
// WARMUP seconds of playing.
#include <AL/al.h>
#include <AL/alc.h>
#include <SFML/Audio/Music.hpp>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

static double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static double wallSeconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sfml-music N SECONDS WARMUP FILE...\n");
    return 2;
  }
  int count = std::atoi(argv[1]);
  double seconds = std::atof(argv[2]);
  double warmUp = std::atof(argv[3]);
  int fileCount = argc - 4;
  std::vector<std::unique_ptr<sf::Music>> voices;
  ALCdevice* device = nullptr;
  ALCcontext* context = nullptr;
  if (count == 0) {
    device = alcOpenDevice(nullptr);
    if (!device) return 1;
    context = alcCreateContext(device, nullptr);
    alcMakeContextCurrent(context);
  }
  for (int index = 0; index < count; index++) {
    if (fileCount == 0) return 2;
    auto music = std::make_unique<sf::Music>();
    if (!music->openFromFile(argv[4 + index % fileCount])) return 1;
    music->setLoop(true);
    music->play();
    voices.push_back(std::move(music));
  }
  usleep(static_cast<useconds_t>(warmUp * 1e6));
  double cpu = cpuSeconds();
  double wall = wallSeconds();
  usleep(static_cast<useconds_t>(seconds * 1e6));
  std::printf("%.6f %.6f\n", cpuSeconds() - cpu, wallSeconds() - wall);
  std::fflush(stdout);
  for (auto& music : voices) music->stop();
  if (context) {
    alcMakeContextCurrent(nullptr);
    alcDestroyContext(context);
    alcCloseDevice(device);
  }
  return 0;
}
