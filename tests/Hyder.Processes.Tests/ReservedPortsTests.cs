using System.Net;
using System.Net.Sockets;
using Hyder.Testing;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>The allocator that gives tests ports they can name before anything listens on them.</summary>
[Collection(RealProcesses.Name)]
public sealed class ReservedPortsTests
{
    [Fact]
    public void PortsLieBelowTheEphemeralRangeAndAreNeverHandedOutTwice()
    {
        var ephemeral = File.Exists("/proc/sys/net/ipv4/ip_local_port_range")
            ? int.Parse(File.ReadAllText("/proc/sys/net/ipv4/ip_local_port_range").Split('\t', ' ')[0], System.Globalization.CultureInfo.InvariantCulture)
            : 49152;
        var ports = Enumerable.Range(0, 200).Select(_ => ReservedPorts.Take()).ToArray();
        Assert.All(ports, p => Assert.InRange(p, ReservedPorts.First, Math.Min(ephemeral, 32768) - 1));
        Assert.Equal(ports.Length, ports.Distinct().Count());

        var block = ReservedPorts.TakeBlock(100);
        Assert.InRange(block + 99, ReservedPorts.First, ReservedPorts.End - 1);
        Assert.DoesNotContain(ports, p => p >= block && p < block + 100);
    }

    [Fact]
    public void ATakenPortIsLockedAgainstOtherProcesses()
    {
        // The lock is an flock on the port's file: a second open of it is refused, in this process
        // as in any other test process.
        var port = ReservedPorts.Take();
        var file = Path.Combine(Path.GetTempPath(), "hyder-test-ports", port.ToString(System.Globalization.CultureInfo.InvariantCulture));
        Assert.Throws<IOException>(() => new FileStream(file, FileMode.Open, FileAccess.ReadWrite, FileShare.None).Dispose());

        // And it is free to bind: nothing listens there.
        using var listener = new TcpListener(IPAddress.Loopback, port);
        listener.Start();
    }

    [Fact]
    public void PortsLockedElsewhereOrListenedOnAreSkipped()
    {
        // The next candidates after a take are the following ports: one locked by "another
        // process" (an flock held here), one that something listens on.
        var port = ReservedPorts.Take();
        if (port + 3 >= ReservedPorts.End)
        {
            port = ReservedPorts.Take(); // the cursor wrapped to the start of the range
        }

        using var locked = new FileStream(Path.Combine(Path.GetTempPath(), "hyder-test-ports", (port + 1).ToString(System.Globalization.CultureInfo.InvariantCulture)),
            FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
        using var occupied = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        occupied.Bind(new IPEndPoint(IPAddress.Any, port + 2));
        occupied.Listen(1);

        var next = ReservedPorts.Take();
        Assert.NotEqual(port + 1, next);
        Assert.NotEqual(port + 2, next);
        Assert.True(next > port + 2, $"took {next} after {port}");
    }
}
