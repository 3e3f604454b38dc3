using System.Globalization;
using System.Net;
using System.Net.Sockets;

namespace Hyder.Testing;

/// <summary>
/// Loopback ports for tests that must name a port before anything listens on it: a peer that
/// starts late, a process restarted on its old port, a script given a base port, a port known to
/// be closed. A listener that can report the port it bound binds port 0 instead.
/// </summary>
/// <remarks>
/// A port bound to 0 and released lies in the kernel's ephemeral range (Linux: 32768-60999), where
/// any outgoing connection of a parallel test, or a reconnect to that very port, may be given it
/// before the test binds it again. These ports come from <see cref="First"/> up to the start of the
/// ephemeral range instead, so no outgoing connection is ever given one. Test projects run in
/// separate processes at once: a lock file per port (<c>FileShare.None</c>, an <c>flock</c> on
/// Unix), held until this process exits, keeps two of them from taking the same port, and a bind
/// probe skips a port that anything else listens on (or that a socket in TIME_WAIT still holds).
/// </remarks>
internal static class ReservedPorts
{
    /// <summary>The lowest port handed out.</summary>
    public const int First = 20000;

    private static readonly Lock s_gate = new();
    private static readonly List<FileStream> s_held = [];
    private static readonly string s_directory = Path.Combine(Path.GetTempPath(), "hyder-test-ports");
    private static readonly int s_end = EphemeralStart();
    private static int s_cursor = First + Random.Shared.Next(s_end - First);

    /// <summary>One past the highest port handed out: the start of the ephemeral range, at most 32768.</summary>
    public static int End => s_end;

    /// <summary>A free loopback port no other test (in any process) is given.</summary>
    public static int Take() => TakeBlock(1);

    /// <summary>A free loopback endpoint no other test (in any process) is given.</summary>
    public static IPEndPoint TakeEndPoint() => new(IPAddress.Loopback, Take());

    /// <summary>The first of <paramref name="count"/> consecutive free ports, all taken for this process.</summary>
    public static int TakeBlock(int count)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(count, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(count, (s_end - First) / 4);
        Directory.CreateDirectory(s_directory);
        lock (s_gate)
        {
            for (var tried = 0; tried < s_end - First; tried++)
            {
                var start = s_cursor;
                if (start + count > s_end)
                {
                    start = First;
                }

                var taken = new List<FileStream>(count);
                var port = start;
                for (; port < start + count; port++)
                {
                    var held = TryLock(port);
                    if (held is null || !Free(port))
                    {
                        held?.Dispose();
                        break;
                    }

                    taken.Add(held);
                }

                s_cursor = port + 1 >= s_end ? First : port + 1;
                if (taken.Count == count)
                {
                    s_held.AddRange(taken);
                    return start;
                }

                taken.ForEach(f => f.Dispose());
            }
        }

        throw new InvalidOperationException($"no {count} consecutive free ports between {First} and {s_end}");
    }

    private static FileStream? TryLock(int port)
    {
        try
        {
            return new FileStream(Path.Combine(s_directory, port.ToString(CultureInfo.InvariantCulture)), FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
        }
        catch (IOException)
        {
            return null; // another test process holds it
        }
        catch (UnauthorizedAccessException)
        {
            return null; // another user's lock file
        }
    }

    private static bool Free(int port)
    {
        try
        {
            using var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            probe.Bind(new IPEndPoint(IPAddress.Loopback, port));
            probe.Listen(1);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }

    /// <summary>The low end of the kernel's ephemeral range where it says (Linux), capped at 32768 (the IANA range starts at 49152).</summary>
    private static int EphemeralStart()
    {
        try
        {
            var range = File.ReadAllText("/proc/sys/net/ipv4/ip_local_port_range").Split((char[])['\t', ' ', '\n'], StringSplitOptions.RemoveEmptyEntries);
            var low = int.Parse(range[0], CultureInfo.InvariantCulture);
            if (low < First + 1000)
            {
                throw new InvalidOperationException($"the ephemeral port range starts at {low}, below the test ports ({First}..32767)");
            }

            return Math.Min(low, 32768);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return 32768;
        }
    }
}
