using System.Globalization;
using System.Net.Sockets;
using System.Text;

namespace Hyder.Hosting;

/// <summary>
/// The client side of systemd's notify protocol (<c>sd_notify(3)</c>): each message is one datagram
/// of newline-separated <c>KEY=VALUE</c> assignments sent to the Unix datagram socket named by
/// <c>NOTIFY_SOCKET</c>, a path or, when it starts with '@', a name in the abstract namespace.
/// Without <c>NOTIFY_SOCKET</c> there is no notifier and nothing is sent.
/// </summary>
public sealed class SystemdNotifier : IDisposable
{
    /// <summary>The environment variable naming the socket.</summary>
    public const string SocketVariable = "NOTIFY_SOCKET";

    /// <summary>The watchdog timeout in microseconds, set by systemd when the unit has <c>WatchdogSec=</c>.</summary>
    public const string WatchdogUsecVariable = "WATCHDOG_USEC";

    /// <summary>The process the watchdog timeout is meant for; absent means this one.</summary>
    public const string WatchdogPidVariable = "WATCHDOG_PID";

    private readonly Socket _socket;
    private readonly UnixDomainSocketEndPoint _endPoint;
    private readonly Lock _sendLock = new();

    private SystemdNotifier(string address, UnixDomainSocketEndPoint endPoint)
    {
        Address = address;
        _endPoint = endPoint;
        _socket = new Socket(AddressFamily.Unix, SocketType.Dgram, ProtocolType.Unspecified);
    }

    /// <summary>The socket's address as <c>NOTIFY_SOCKET</c> gave it.</summary>
    public string Address { get; }

    /// <summary>
    /// A notifier for the socket <paramref name="environment"/> names, or null when it names none
    /// (not started by systemd with <c>Type=notify</c>, or an address this protocol does not take).
    /// </summary>
    public static SystemdNotifier? FromEnvironment(Func<string, string?> environment)
    {
        ArgumentNullException.ThrowIfNull(environment);
        var address = environment(SocketVariable);
        return ParseAddress(address) is { } endPoint ? new SystemdNotifier(address!, endPoint) : null;
    }

    /// <summary>A notifier for the process's own environment, or null.</summary>
    public static SystemdNotifier? FromEnvironment() => FromEnvironment(Environment.GetEnvironmentVariable);

    /// <summary>
    /// The endpoint of a <c>NOTIFY_SOCKET</c> value: an absolute path, or '@' and an abstract name
    /// (sent with a leading NUL byte). Anything else (empty, relative, <c>vsock:</c>) is null.
    /// </summary>
    public static UnixDomainSocketEndPoint? ParseAddress(string? value)
    {
        if (string.IsNullOrEmpty(value) || value.Length < 2)
        {
            return null;
        }

        return value[0] switch
        {
            '/' => new UnixDomainSocketEndPoint(value),
            '@' => new UnixDomainSocketEndPoint("\0" + value[1..]),
            _ => null,
        };
    }

    /// <summary>
    /// How often to send <c>WATCHDOG=1</c>: half of <c>WATCHDOG_USEC</c> (sd_watchdog_enabled's
    /// advice), or null when the watchdog is off or meant for another process.
    /// </summary>
    public static TimeSpan? WatchdogInterval(Func<string, string?> environment, int processId)
    {
        ArgumentNullException.ThrowIfNull(environment);
        if (!long.TryParse(environment(WatchdogUsecVariable), NumberStyles.None, CultureInfo.InvariantCulture, out var usec) || usec <= 0)
        {
            return null;
        }

        if (environment(WatchdogPidVariable) is { Length: > 0 } pid
            && (!int.TryParse(pid, NumberStyles.None, CultureInfo.InvariantCulture, out var target) || target != processId))
        {
            return null;
        }

        return TimeSpan.FromMicroseconds(Math.Max(usec / 2, 1));
    }

    /// <summary>
    /// The datagram for <paramref name="assignments"/>: <c>KEY=VALUE</c> lines joined with '\n'.
    /// A value may not hold a newline (it would start a new assignment).
    /// </summary>
    public static byte[] Format(params ReadOnlySpan<(string Key, string Value)> assignments)
    {
        var text = new StringBuilder();
        foreach (var (key, value) in assignments)
        {
            if (key.Length == 0 || key.Contains('=', StringComparison.Ordinal) || key.Contains('\n', StringComparison.Ordinal))
            {
                throw new ArgumentException($"'{key}' is not a notify key.", nameof(assignments));
            }

            if (text.Length > 0)
            {
                text.Append('\n');
            }

            text.Append(key).Append('=').Append(value.Replace('\n', ' '));
        }

        return Encoding.UTF8.GetBytes(text.ToString());
    }

    /// <summary>
    /// Sends one message; false if it could not be sent (systemd gone, socket removed). A lost
    /// notification must not stop the service, so failures are reported, not thrown.
    /// </summary>
    public bool TrySend(params ReadOnlySpan<(string Key, string Value)> assignments)
    {
        var datagram = Format(assignments);
        lock (_sendLock)
        {
            try
            {
                return _socket.SendTo(datagram, SocketFlags.None, _endPoint) == datagram.Length;
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                return false;
            }
        }
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        lock (_sendLock)
        {
            _socket.Dispose();
        }
    }
}
