extension BeaconBridge {
  /// Hands the pipeline the keys of the pairings by key (`BeaconPipeline.setAuthenticator`).
  public func setAuthenticator(_ authenticator: (any BeaconAuthenticator)?) {
    pipeline.setAuthenticator(authenticator)
  }

  /// The pipeline's authenticator as it stands (its resolvers' tracking and counters).
  public var authenticator: (any BeaconAuthenticator)? { pipeline.authenticator }
}
