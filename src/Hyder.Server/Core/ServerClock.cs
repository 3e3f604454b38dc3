namespace Hyder.Server.Core;

/// <summary>The server's pauses on its clock (<see cref="ServerOptions.TimeProvider"/>), shared by the server and its log follower.</summary>
internal static class ServerClock
{
    /// <summary>
    /// A pause of <paramref name="milliseconds"/> on <paramref name="time"/>. In cooperative mode
    /// it takes no token, since cancelling a delay on a custom clock continues on the thread pool:
    /// the caller checks for the stop after it.
    /// </summary>
    public static Task PauseAsync(TimeProvider time, bool cooperative, int milliseconds, CancellationToken ct) =>
        time == TimeProvider.System ? Task.Delay(milliseconds, ct)
        : cooperative ? Task.Delay(TimeSpan.FromMilliseconds(milliseconds), time, CancellationToken.None)
        : Task.Delay(TimeSpan.FromMilliseconds(milliseconds), time, ct);
}
