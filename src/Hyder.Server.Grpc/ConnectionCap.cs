using System.Net;
using Microsoft.AspNetCore.Connections;

namespace Hyder.Server.Grpc;

/// <summary>
/// Caps the open connections from one IP address: a connection past the cap is closed before any
/// byte is read (before the TLS handshake), so one client cannot use up the server's connections.
/// </summary>
internal sealed class ConnectionCap(int perAddress)
{
    private readonly Dictionary<IPAddress, int> _open = [];

    public ConnectionDelegate Wrap(ConnectionDelegate next) => async connection =>
    {
        var address = (connection.RemoteEndPoint as IPEndPoint)?.Address;
        if (address is null)
        {
            await next(connection).ConfigureAwait(false);
            return;
        }

        if (address.IsIPv4MappedToIPv6)
        {
            address = address.MapToIPv4();
        }

        if (!TryEnter(address))
        {
            connection.Abort(new ConnectionAbortedException($"More than {perAddress} connections from {address}."));
            return;
        }

        try
        {
            await next(connection).ConfigureAwait(false);
        }
        finally
        {
            Exit(address);
        }
    };

    private bool TryEnter(IPAddress address)
    {
        lock (_open)
        {
            _open.TryGetValue(address, out var count);
            if (count >= perAddress)
            {
                return false;
            }

            _open[address] = count + 1;
            return true;
        }
    }

    private void Exit(IPAddress address)
    {
        lock (_open)
        {
            if (_open[address] == 1)
            {
                _open.Remove(address);
            }
            else
            {
                _open[address]--;
            }
        }
    }
}
