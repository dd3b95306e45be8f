/*
 * leitmotif.hpp: Leitmotif's C API for C++ (C++11 or later), header only, over leitmotif.h.
 *
 * leitmotif::engine owns one lm_engine: it is made in the constructor, destroyed in the
 * destructor, movable and not copyable. A failed call throws leitmotif::error, which carries
 * the lm_error code and Leitmotif's message (what failed and why, the cue file's line and
 * column). Every other rule of leitmotif.h holds: which threads may call what, what never
 * blocks. Where a game builds without exceptions, use leitmotif.h directly.
 *
 *   leitmotif::engine music(config);          // lm_config from lm_config_defaults()
 *   music.start();
 *   music.post("enemy.spotted", {lm_number("threat", 3), lm_string("kind", "patrol")});
 *   music.set_parameter("health", 0.2, 1.0);
 *   std::string state = music.state();
 */
#ifndef LEITMOTIF_HPP
#define LEITMOTIF_HPP

#include <leitmotif.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace leitmotif {

/* A failed Leitmotif call: code() is the lm_error, what() the message. */
class error : public std::runtime_error {
 public:
  error(lm_error code, const std::string &message) : std::runtime_error(message), code_(code) {}
  lm_error code() const noexcept { return code_; }

 private:
  lm_error code_;
};

namespace detail {
inline void check(lm_error code, const char *message) {
  if (code != LM_OK) throw error(code, std::string(lm_error_name(code)) + ": " + message);
}
/* The message of a call with no engine (lm_last_error), read after that call has returned:
   passed as an argument beside it, the compiler may read it first (g++ does), which gave the
   message of the call before. */
inline void check(lm_error code, const char *(*message)(void)) {
  if (code != LM_OK) throw error(code, std::string(lm_error_name(code)) + ": " + message());
}
}  // namespace detail

/* One engine: its output, the director for one cue file, its queue player and the library. */
class engine {
 public:
  explicit engine(const lm_config &config) {
    detail::check(lm_engine_create(&config, &handle_), lm_last_error);
  }
  ~engine() {
    if (handle_) lm_engine_destroy(handle_);
  }
  engine(engine &&other) noexcept : handle_(other.handle_) { other.handle_ = NULL; }
  engine &operator=(engine &&other) noexcept {
    if (this != &other) {
      if (handle_) lm_engine_destroy(handle_);
      handle_ = other.handle_;
      other.handle_ = NULL;
    }
    return *this;
  }
  engine(const engine &) = delete;
  engine &operator=(const engine &) = delete;

  /* The C handle, for the calls this header does not wrap. */
  lm_engine *get() const noexcept { return handle_; }

  void start(const char *state = NULL) { check(lm_start(handle_, state)); }

  /* Posts a cue; false when the bus was full and the event was dropped (never blocks). */
  bool post(const char *cue, std::initializer_list<lm_value> payload = {}) {
    lm_error code = lm_post(handle_, cue, payload.size() ? payload.begin() : NULL, payload.size());
    if (code == LM_ERROR_BUS_FULL) return false;
    check(code);
    return true;
  }
  bool post(const char *cue, const std::vector<lm_value> &payload) {
    lm_error code = lm_post(handle_, cue, payload.empty() ? NULL : payload.data(), payload.size());
    if (code == LM_ERROR_BUS_FULL) return false;
    check(code);
    return true;
  }

  void set_parameter(const char *name, double value, double ramp_seconds = 0) {
    check(lm_set_parameter(handle_, name, value, ramp_seconds));
  }
  double parameter(const char *name) const {
    double value = 0;
    check(lm_get_parameter(handle_, name, &value));
    return value;
  }

  void update() { check(lm_update(handle_)); }
  /* Offline engines: `frames` interleaved stereo float frames into `buffer`. */
  void render(float *buffer, std::size_t frames) { check(lm_render(handle_, buffer, frames)); }
  int sample_rate() const {
    int rate = 0;
    check(lm_get_sample_rate(handle_, &rate));
    return rate;
  }

  lm_now_playing_info now_playing() const {
    lm_now_playing_info info;
    info.struct_size = sizeof info;
    check(lm_now_playing(handle_, &info));
    return info;
  }
  /* The state the rules see ("" before the music starts). */
  std::string state() const {
    char name[LM_TEXT_CAPACITY];
    check(lm_get_state(handle_, name, sizeof name, NULL, 0));
    return name;
  }
  /* The state whose music is heard now. */
  std::string audible_state() const {
    char name[LM_TEXT_CAPACITY];
    check(lm_get_state(handle_, NULL, 0, name, sizeof name));
    return name;
  }

  /* The game's commands (see leitmotif.h). */
  void stop(double fade_seconds = 0) { check(lm_stop(handle_, fade_seconds)); }
  void resume(double fade_seconds = 0) { check(lm_resume(handle_, fade_seconds)); }
  void set_state(const char *state, double seconds = 0, lm_moment at = LM_AT_NOW) {
    check(lm_set_state(handle_, state, seconds, at));
  }
  void play_stinger(const char *source, lm_moment at = LM_AT_NOW, float volume = 1) {
    check(lm_play_stinger(handle_, source, at, volume));
  }
  /* Keeps a music file decoded in memory (see lm_preload); unload lets go of it. */
  void preload(const char *path) { check(lm_preload(handle_, path)); }
  void unload(const char *path) { check(lm_unload(handle_, path)); }
  void set_preload_budget(size_t bytes) { check(lm_set_preload_budget(handle_, bytes)); }
  void skip(lm_skip_direction direction = LM_SKIP_NEXT) { check(lm_skip(handle_, direction)); }
  void set_music_volume(float volume, double ramp_seconds = 0) {
    check(lm_set_music_volume(handle_, volume, ramp_seconds));
  }

  void set_master_volume(float volume, double ramp_seconds = 0) {
    check(lm_set_master_volume(handle_, volume, ramp_seconds));
  }

  /* The player's music library (I/O: from a menu or a loading thread). */
  lm_authorization authorization_status() const {
    lm_authorization status = LM_AUTHORIZATION_NOT_DETERMINED;
    check(lm_library_authorization_status(handle_, &status));
    return status;
  }
  lm_scan_result scan_library(lm_scan_progress_fn progress = NULL, void *user_data = NULL) {
    lm_scan_result result;
    result.struct_size = sizeof result;
    check(lm_library_scan(handle_, progress, user_data, &result));
    return result;
  }
  /* Every song `query` matches (NULL: every song, by title), from its offset on. */
  std::vector<lm_media_item> query(const lm_query *query = NULL) const {
    std::size_t total = 0;
    check(lm_library_query(handle_, query, NULL, 0, NULL, &total));
    std::vector<lm_media_item> items(total);
    if (total == 0) return items;
    items[0].struct_size = sizeof(lm_media_item);
    std::size_t count = 0;
    check(lm_library_query(handle_, query, items.data(), items.size(), &count, &total));
    items.resize(count);
    return items;
  }
  std::vector<lm_playlist> playlists() const {
    std::size_t total = 0;
    check(lm_library_playlists(handle_, NULL, 0, NULL, &total));
    std::vector<lm_playlist> lists(total);
    if (total == 0) return lists;
    lists[0].struct_size = sizeof(lm_playlist);
    std::size_t count = 0;
    check(lm_library_playlists(handle_, lists.data(), lists.size(), &count, &total));
    lists.resize(count);
    return lists;
  }
  void set_picks(const std::vector<uint64_t> &persistent_ids) {
    check(lm_set_picks(handle_, persistent_ids.empty() ? NULL : persistent_ids.data(), persistent_ids.size()));
  }
  void set_queue(const std::vector<uint64_t> &persistent_ids, double seconds = 0, lm_moment at = LM_AT_NOW,
                 lm_repeat_mode repeat = LM_REPEAT_ALL, lm_shuffle_mode shuffle = LM_SHUFFLE_OFF) {
    check(lm_set_queue_shuffled(handle_, persistent_ids.empty() ? NULL : persistent_ids.data(),
                                persistent_ids.size(), seconds, at, repeat, shuffle));
  }

  /* The player. */
  void play() { check(lm_player_play(handle_)); }
  void pause() { check(lm_player_pause(handle_)); }
  void set_rate(float rate) { check(lm_player_set_rate(handle_, rate)); }
  void set_tempo(float tempo) { check(lm_player_set_tempo(handle_, tempo)); }
  void seek(double seconds) { check(lm_player_seek(handle_, seconds)); }
  void set_volume(float volume) { check(lm_player_set_volume(handle_, volume)); }

  /* Reports and diagnostics: C function pointers (a captureless lambda converts to one). */
  void on_report(lm_report_fn callback, void *user_data = NULL) {
    check(lm_set_report_callback(handle_, callback, user_data));
  }
  /* Before start(): reports when decided (the default) or when heard. */
  void set_report_timing(lm_report_timing timing) { check(lm_set_report_timing(handle_, timing)); }
  void on_beat(lm_beat_fn callback, void *user_data = NULL) {
    check(lm_set_beat_callback(handle_, callback, user_data));
  }
  void on_marker(lm_marker_fn callback, void *user_data = NULL) {
    check(lm_set_marker_callback(handle_, callback, user_data));
  }
  void on_diagnostic(lm_diagnostic_fn callback, void *user_data = NULL) {
    check(lm_set_diagnostic_callback(handle_, callback, user_data));
  }
  void flush_reports() { check(lm_flush_reports(handle_)); }

  /* The desktop (MPRIS). Each throws leitmotif::error with LM_ERROR_UNAVAILABLE where there is
     no session bus: catch it once and play on. */
  void publish_on_desktop(const char *identity = NULL, const char *desktop_entry = NULL) {
    check(lm_desktop_publish(handle_, identity, desktop_entry));
  }
  void unpublish_from_desktop() { check(lm_desktop_unpublish(handle_)); }
  void start_system_music() { check(lm_system_music_start(handle_)); }
  void stop_system_music() { check(lm_system_music_stop(handle_)); }
  std::vector<lm_system_music_app> system_music_apps() const {
    std::size_t total = 0;
    check(lm_system_music_apps(handle_, NULL, 0, &total));
    std::vector<lm_system_music_app> apps(total);
    if (total == 0) return apps;
    apps[0].struct_size = sizeof(lm_system_music_app);
    check(lm_system_music_apps(handle_, apps.data(), apps.size(), &total));
    if (total < apps.size()) apps.resize(total);
    return apps;
  }
  void system_music_command(lm_remote_command command, const char *bus_name = NULL, double seconds = 0) {
    check(lm_system_music_command(handle_, bus_name, command, seconds));
  }
  void system_music_open(const char *uri, const char *bus_name = NULL) {
    check(lm_system_music_open(handle_, bus_name, uri));
  }
  void on_system_music(lm_system_music_fn callback, void *user_data = NULL) {
    check(lm_set_system_music_callback(handle_, callback, user_data));
  }

 private:
  void check(lm_error code) const { detail::check(code, lm_engine_last_error(handle_)); }
  lm_engine *handle_ = NULL;
};

/* A mount (lm_mount_memory, lm_mount_files), unmounted when it goes. Declare it before the
   engines that play from it, so they are destroyed first (an unmount while music plays from the
   mount is refused; the destructor cannot throw, so a refused one stays mounted). */
class mount {
 public:
  /* A copy of `size` bytes at `data`, as the file `path`. */
  static mount memory(const std::string &path, const void *data, size_t size) {
    detail::check(lm_mount_memory(path.c_str(), data, size), lm_last_error);
    return mount(path);
  }
  /* A folder at `path` of `names`, read through `callbacks`. */
  static mount files(const std::string &path, const std::vector<std::string> &names,
                     const lm_file_callbacks &callbacks) {
    std::vector<const char *> pointers;
    for (size_t i = 0; i < names.size(); i++) pointers.push_back(names[i].c_str());
    detail::check(lm_mount_files(path.c_str(), pointers.empty() ? NULL : &pointers[0], pointers.size(), &callbacks),
                  lm_last_error);
    return mount(path);
  }
  ~mount() {
    if (!path_.empty()) lm_unmount(path_.c_str());
  }
  mount(mount &&other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  mount &operator=(mount &&other) noexcept {
    if (this != &other) {
      if (!path_.empty()) lm_unmount(path_.c_str());
      path_ = std::move(other.path_);
      other.path_.clear();
    }
    return *this;
  }
  mount(const mount &) = delete;
  mount &operator=(const mount &) = delete;
  /* Unmounts now, throwing the refusal (files of it still open). */
  void unmount() {
    if (path_.empty()) return;
    detail::check(lm_unmount(path_.c_str()), lm_last_error);
    path_.clear();
  }
  const std::string &path() const noexcept { return path_; }

 private:
  explicit mount(const std::string &path) : path_(path) {}
  std::string path_;
};

}  // namespace leitmotif

#endif /* LEITMOTIF_HPP */
