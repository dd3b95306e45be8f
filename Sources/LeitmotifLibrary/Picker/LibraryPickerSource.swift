import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// The picker's view of a `MediaLibrary`: consent through the library's access gate, songs and
/// search through the index.
package struct LibraryPickerSource: MediaPickerSource {
  let library: MediaLibrary

  package var authorizationStatus: AuthorizationStatus { library.authorizationStatus }

  package func checkUsageDescription() throws(LibraryError) {
    guard let description = library.configuration.usageDescription,
      !description.trimmingWhitespaceAndNewlines().isEmpty
    else { throw LibraryError.missingUsageDescription(applicationID: library.configuration.applicationID) }
  }

  package func requestAuthorization() throws(LibraryError) -> AuthorizationStatus { try library.requestAuthorization() }

  package func checkAccess() throws(LibraryError) { try library.access.check() }

  /// The song query's items and its index-style sections.
  package func songs() throws(LibraryError) -> (items: [MediaItem], sections: [MediaPicker.Section]) {
    let query = MediaQuery.songs()
    let items = try library.items(matching: query)
    let sections = try library.itemSections(matching: query).map {
      MediaPicker.Section(title: $0.title, range: $0.range)
    }
    return (items, sections)
  }

  /// A query's predicates combine with AND, and the search is "title OR artist OR album
  /// contains": one contains query per property, merged.
  package func search(text: String) throws(LibraryError) -> [MediaItem] {
    var found: [MediaItem] = []
    for property in [MediaProperty.title, .artist, .albumTitle] {
      var query = MediaQuery.songs()
      query.addFilterPredicate(MediaPropertyPredicate(value: text, forProperty: property, comparisonType: .contains))
      found += try library.items(matching: query)
    }
    return found
  }
}
