extension String {
  /// The string without leading and trailing spaces and tabs. (FoundationEssentials has no
  /// `trimmingCharacters(in:)`, and the core stays on FoundationEssentials.)
  public var trimmedWhitespace: String {
    let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let start = firstIndex(where: { !isBlank($0) }) else { return "" }
    let end = lastIndex(where: { !isBlank($0) })!
    return String(self[start...end])
  }
}
