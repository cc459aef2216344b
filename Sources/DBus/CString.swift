#if canImport(Glibc)
  import Glibc
#endif

/// Comparisons of C strings (as libdbus and the wire hold header fields) with Swift strings,
/// without copying either.
enum CString {
  static func equal(_ text: UnsafePointer<CChar>?, _ expected: String) -> Bool {
    guard let text else { return false }
    var expected = expected
    return expected.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { chars in
        strncmp(text, chars.baseAddress!, chars.count) == 0 && text[chars.count] == 0
      }
    }
  }

  /// `path` is `namespace` or below it (`path_namespace` in a match rule).
  static func isPath(_ path: UnsafePointer<CChar>?, inNamespace namespace: String) -> Bool {
    guard let path else { return false }
    if namespace == "/" { return true }
    var namespace = namespace
    return namespace.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { chars in
        strncmp(path, chars.baseAddress!, chars.count) == 0
          && (path[chars.count] == 0 || path[chars.count] == CChar(UInt8(ascii: "/")))
      }
    }
  }
}
