/// ID3's genre references: an ID3v2 TCON of "(13)" or "13" (what many taggers still write, after
/// ID3v1's genre byte) names genre 13 of ID3v1's list, Pop. They were kept as written, and
/// "(13)" and "17" showed as genres in the library (a player's trial).
enum ID3Genre {
  /// `value`'s genre: a reference made a name ("(13)" -> "Pop"; "(13)Britpop", a refinement,
  /// -> "Britpop"; "(RX)" -> "Remix", "(CR)" -> "Cover"), anything else as it is. A number
  /// past the list stays as written.
  static func resolved(_ value: String) -> String {
    var text = Substring(value)
    var reference: Substring?
    if text.hasPrefix("("), let close = text.firstIndex(of: ")") {
      reference = text[text.index(after: text.startIndex)..<close]
      text = text[text.index(after: close)...]
    } else if !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
      reference = text
      text = ""
    }
    let rest = String(text).trimmingSpaces
    guard let reference else { return value }
    if !rest.isEmpty { return rest }
    switch reference {
    case "RX": return "Remix"
    case "CR": return "Cover"
    default:
      guard let number = Int(reference), names.indices.contains(number) else { return value }
      return names[number]
    }
  }

  /// ID3v1's genres (0 to 79) and Winamp's additions (80 to 125), by number.
  static let names = [
    "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
    "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
    "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop", "Vocal",
    "Jazz+Funk", "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game", "Sound Clip", "Gospel",
    "Noise", "Alternative Rock", "Bass", "Soul", "Punk", "Space", "Meditative", "Instrumental Pop",
    "Instrumental Rock", "Ethnic", "Gothic", "Darkwave", "Techno-Industrial", "Electronic", "Pop-Folk", "Eurodance",
    "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta", "Top 40", "Christian Rap", "Pop/Funk", "Jungle",
    "Native American", "Cabaret", "New Wave", "Psychedelic", "Rave", "Showtunes", "Trailer", "Lo-Fi", "Tribal",
    "Acid Punk", "Acid Jazz", "Polka", "Retro", "Musical", "Rock & Roll", "Hard Rock",
    // Winamp's.
    "Folk", "Folk-Rock", "National Folk", "Swing", "Fast Fusion", "Bebop", "Latin", "Revival", "Celtic",
    "Bluegrass", "Avantgarde", "Gothic Rock", "Progressive Rock", "Psychedelic Rock", "Symphonic Rock", "Slow Rock",
    "Big Band", "Chorus", "Easy Listening", "Acoustic", "Humour", "Speech", "Chanson", "Opera", "Chamber Music",
    "Sonata", "Symphony", "Booty Bass", "Primus", "Porn Groove", "Satire", "Slow Jam", "Club", "Tango", "Samba",
    "Folklore", "Ballad", "Power Ballad", "Rhythmic Soul", "Freestyle", "Duet", "Punk Rock", "Drum Solo",
    "A Cappella", "Euro-House", "Dance Hall",
  ]
}
