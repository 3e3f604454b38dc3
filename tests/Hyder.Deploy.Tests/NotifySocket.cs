using System.Net.Sockets;
using System.Text;
using System.Threading.Channels;

namespace Hyder.Deploy.Tests;

/// <summary>
/// The systemd side of the notify protocol: a bound Unix datagram socket that collects every
/// message sent to it, as <c>NOTIFY_SOCKET</c> names it (a path, or '@' and an abstract name).
/// </summary>
internal sealed class NotifySocket : IDisposable
{
    private readonly Socket _socket;
    private readonly string? _directory;
    private readonly Channel<string> _received = Channel.CreateUnbounded<string>();
    private readonly List<string> _all = [];
    private readonly Task _receiving;

    public NotifySocket(bool isAbstract = false)
    {
        _socket = new Socket(AddressFamily.Unix, SocketType.Dgram, ProtocolType.Unspecified);
        if (isAbstract)
        {
            var name = "hyder-test-notify-" + Guid.NewGuid().ToString("N")[..12];
            _socket.Bind(new UnixDomainSocketEndPoint("\0" + name));
            Address = "@" + name;
        }
        else
        {
            _directory = Path.Combine(Path.GetTempPath(), "hyder-notify-" + Guid.NewGuid().ToString("N")[..12]);
            Directory.CreateDirectory(_directory);
            Address = Path.Combine(_directory, "notify");
            _socket.Bind(new UnixDomainSocketEndPoint(Address));
        }

        _receiving = ReceiveAsync();
    }

    /// <summary>The value for <c>NOTIFY_SOCKET</c>.</summary>
    public string Address { get; }

    /// <summary>Every message received so far, in order.</summary>
    public IReadOnlyList<string> Received
    {
        get
        {
            lock (_all)
            {
                return [.. _all];
            }
        }
    }

    /// <summary>The next message that <paramref name="match"/> accepts; earlier ones are passed over (they stay in <see cref="Received"/>).</summary>
    public async Task<string> WaitForAsync(Func<string, bool> match, TimeSpan timeout)
    {
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            while (true)
            {
                var message = await _received.Reader.ReadAsync(cancel.Token);
                if (match(message))
                {
                    return message;
                }
            }
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"No matching notify message within {timeout.TotalSeconds} s; received: [{string.Join(" | ", Received)}]");
        }
    }

    /// <summary>The next message holding the assignment <paramref name="assignment"/> (<c>READY=1</c>).</summary>
    public Task<string> WaitForAsync(string assignment, TimeSpan timeout) =>
        WaitForAsync(m => Assignments(m).Contains(assignment), timeout);

    /// <summary>The lines of one message.</summary>
    public static string[] Assignments(string message) => message.Split('\n');

    public void Dispose()
    {
        _socket.Dispose();
        try
        {
            _receiving.Wait(TimeSpan.FromSeconds(5));
        }
        catch (AggregateException)
        {
        }

        if (_directory is not null)
        {
            Directory.Delete(_directory, recursive: true);
        }
    }

    private async Task ReceiveAsync()
    {
        var buffer = new byte[4096];
        try
        {
            while (true)
            {
                var length = await _socket.ReceiveAsync(buffer, SocketFlags.None);
                var message = Encoding.UTF8.GetString(buffer, 0, length);
                lock (_all)
                {
                    _all.Add(message);
                }

                _received.Writer.TryWrite(message);
            }
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            _received.Writer.TryComplete();
        }
    }
}
