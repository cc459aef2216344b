import Foundation

/// Why bytes are not JSON, in the words of `JSONSerialization` ("Invalid value around character
/// 19."), which says where; `JSONDecoder` only says that they are not. Used for error messages
/// only, never for parsing.
enum JSONDiagnosis {
  static func reason(_ data: Data) -> String? {
    do {
      _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
      return nil
    } catch {
      return (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
    }
  }
}
