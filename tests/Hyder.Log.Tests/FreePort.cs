using System.Net;
using System.Net.Sockets;

namespace Hyder.Log.Tests;

internal static class FreePort
{
    /// <summary>A loopback port free right now (the OS may hand it out again; tests retry on bind failure).</summary>
    public static int Next()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }
}
