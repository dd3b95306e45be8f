import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

package extension MediaItem {
  /// How errors name the item: its title, else its file name.
  var errorName: String { "\"\(displayName)\"" }
}
