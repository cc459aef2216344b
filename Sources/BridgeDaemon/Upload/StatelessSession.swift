import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The one URLSession the daemon's HTTP clients (the uploader, the G-Zone poller) use: no URL
/// cache, no cookie store, no credential store.
///
/// On swift-corelibs-foundation, making any `URLSessionConfiguration` touches `URLCache.shared`,
/// whose first use creates a 20 MB disk cache in `$HOME/.cache/org.swift.foundation.URLCache/`
/// (`.ephemeral` makes a cache of its own in the same place; `.default` takes the shared one). The daemon's home would then
/// hold caches next to its store, and G-Zone GETs could be answered from disk. So the shared
/// cache is replaced first by one with no disk (a disk path that cannot be a directory leaves
/// it without one), and the session gets none at all. Every request the daemon makes must reach
/// the server, so nothing is lost.
///
/// The configuration still instantiates `HTTPCookieStorage.shared`, which creates an empty
/// `$XDG_DATA_HOME/<binary's directory name>` (`~/.local/share/bin`) and cannot be replaced;
/// the packaged user has no home (`/nonexistent`, beaconbridge.sysusers), so under systemd that
/// fails harmlessly and the state directory holds only the store.
enum StatelessSession {
  static let shared: URLSession = {
    URLCache.shared = URLCache(memoryCapacity: 0, diskCapacity: 0, diskPath: "/dev/null")
    let configuration = URLSessionConfiguration.default
    configuration.urlCache = nil
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.httpCookieStorage = nil
    configuration.httpShouldSetCookies = false
    configuration.httpCookieAcceptPolicy = .never
    configuration.urlCredentialStorage = nil
    return URLSession(configuration: configuration)
  }()
}
